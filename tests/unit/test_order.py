"""The topological order behind the pack's "no cycle" proof (graphsvc.core.order), on plain data.

The invariant the pack relies on: every unmarked edge goes up in ord, so every cycle holds a
marked edge. Checked for the from-scratch order and for a pure simulation of the store's
insertion (Pearce–Kelly per edge, region searches bounded by ord), on random graphs.
"""

from __future__ import annotations

from hypothesis import given, settings, strategies as st

from graphsvc.core.cycles import find_cycle
from graphsvc.core.order import from_scratch, pool_reorder, ranks

edges_strategy = st.lists(st.tuples(st.integers(1, 12), st.integers(1, 12)).filter(lambda e: e[0] != e[1]),
                          max_size=40)


def holds(ords: dict[int, int], edges: set[tuple[int, int]], marked: set[tuple[int, int]]) -> bool:
    return all(ords[a] < ords[b] for a, b in edges if (a, b) not in marked)


@given(edges_strategy)
def test_from_scratch_orders_every_unmarked_edge_and_uses_the_seqs_as_ords(edges):
    nodes = list(range(1, 13))
    ords, marked = from_scratch(nodes, edges)
    assert sorted(ords.values()) == nodes
    assert holds(ords, set(edges), marked)
    assert marked <= set(edges)
    if find_cycle([a for a, _ in edges], [b for _, b in edges]) is None:
        assert not marked  # an acyclic graph is ordered without marking anything


def test_from_scratch_marks_one_edge_of_a_cycle_and_is_deterministic():
    edges = [(1, 2), (2, 3), (3, 1), (3, 4)]
    assert from_scratch([1, 2, 3, 4], edges) == from_scratch([4, 3, 2, 1], list(reversed(edges)))
    ords, marked = from_scratch([1, 2, 3, 4], edges)
    assert marked == {(3, 1)}


def test_a_part_of_the_graph_reuses_its_own_pool():
    ords, marked = from_scratch([5, 9], [(9, 5)], pool=[40, 70])
    assert ords == {9: 40, 5: 70} and not marked


def reach(start: int, step, keep) -> set[int]:
    seen, frontier = {start}, [start]
    while frontier:
        nxt = []
        for node in frontier:
            for other in step(node):
                if other not in seen and keep(other):
                    seen.add(other)
                    nxt.append(other)
        frontier = nxt
    return seen


@settings(max_examples=300)
@given(edges_strategy)
def test_inserting_edges_one_by_one_keeps_the_invariant_and_marks_only_loop_closers(edges):
    ords = {n: n for n in range(1, 13)}  # a new capsule takes ord = seq
    present: set[tuple[int, int]] = set()
    marked: set[tuple[int, int]] = set()
    for a, b in edges:
        if (a, b) in present:
            continue
        if ords[a] > ords[b]:
            live = present - marked
            forward = reach(b, lambda n: [y for x, y in live if x == n], lambda n: ords[n] <= ords[a])
            if a in forward:
                marked.add((a, b))  # it closes a loop over unmarked edges
                assert find_cycle([x for x, _ in live | {(a, b)}], [y for _, y in live | {(a, b)}]) is not None
            else:
                backward = reach(a, lambda n: [x for x, y in live if y == n], lambda n: ords[n] >= ords[b])
                ords.update(pool_reorder({n: ords[n] for n in backward}, {n: ords[n] for n in forward}))
        present.add((a, b))
        assert sorted(ords.values()) == list(range(1, 13))
        assert holds(ords, present, marked)


def test_close_gaps_keeps_the_relative_order_and_renumbers_onto_the_remaining_seqs():
    from graphsvc.core.order import close_gaps

    # seqs 3..8 held ords 3..8; cap-5 (seq 5, ord 7) and cap-8 (seq 8, ord 4) left
    held = [("cap-3", 3), ("cap-4", 8), ("cap-6", 5), ("cap-7", 6)]

    changed = close_gaps(held, [3, 4, 6, 7])
    renumbered = sorted(((changed.get(i, o), i) for i, o in held))
    assert [i for _, i in renumbered] == [i for i, _ in sorted(held, key=lambda p: p[1])]  # same relative order
    assert sorted(changed.get(i, o) for i, o in held) == [3, 4, 6, 7]
    assert "cap-3" not in changed  # an unchanged ord is not rewritten
    import pytest

    with pytest.raises(ValueError):
        close_gaps(held, [3, 4])


@settings(max_examples=300, deadline=None)
@given(st.lists(st.integers(1, 60), max_size=14, unique=True), st.data())
def test_ranks_in_flat_arrays_give_exactly_the_ords_of_from_scratch(seqs, data):
    nodes = sorted(seqs)
    drawn = data.draw(st.lists(st.tuples(st.sampled_from(nodes), st.sampled_from(nodes)), max_size=30)) if nodes else []
    edges = sorted({(a, b) for a, b in drawn if a != b})
    ord_of, _ = from_scratch(nodes, edges)
    index = {seq: i for i, seq in enumerate(nodes)}
    rank = ranks(len(nodes), [index[a] for a, _ in edges], [index[b] for _, b in edges])
    assert {seq: nodes[rank[i]] for i, seq in enumerate(nodes)} == ord_of
