"""graphsvc.core.cycles: one canonical cycle, linear time, on plain edge lists."""

from __future__ import annotations

import itertools
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from graphsvc.core.cycles import find_cycle


def cycle_of(edges: list[tuple[int, int]]) -> list[int] | None:
    return find_cycle([a for a, _ in edges], [b for _, b in edges])


def is_cycle(edges: list[tuple[int, int]], cycle: list[int]) -> bool:
    present = set(edges)
    return len(set(cycle)) == len(cycle) and all(
        (cycle[i], cycle[(i + 1) % len(cycle)]) in present for i in range(len(cycle)))


def brute_force_smallest_cyclic_node(edges: list[tuple[int, int]]) -> int | None:
    """The smallest node that reaches itself (reference answer by plain reachability)."""
    nodes = sorted({n for edge in edges for n in edge})
    successors: dict[int, set[int]] = {n: set() for n in nodes}
    for a, b in edges:
        successors[a].add(b)
    for start in nodes:
        seen, stack = set(), list(successors[start])
        while stack:
            node = stack.pop()
            if node == start:
                return start
            if node not in seen:
                seen.add(node)
                stack.extend(successors[node])
    return None


def test_acyclic_graphs_have_no_cycle():
    assert cycle_of([]) is None
    assert cycle_of([(1, 2), (2, 3), (1, 3)]) is None
    assert cycle_of([(3, 2), (2, 1)]) is None


def test_a_triangle_starts_at_its_smallest_node_in_edge_direction():
    assert cycle_of([(2, 3), (3, 1), (1, 2)]) == [1, 2, 3]
    assert cycle_of([(3, 2), (2, 1), (1, 3)]) == [1, 3, 2]


def test_the_smallest_node_on_any_cycle_decides_then_the_shortest_then_lexicographic():
    edges = [(5, 6), (6, 5), (2, 3), (3, 4), (4, 2), (9, 2), (2, 9)]
    assert cycle_of(edges) == [2, 9]
    assert cycle_of([(1, 3), (3, 1), (1, 2), (2, 1)]) == [1, 2]


def test_a_self_loop_is_a_cycle():
    assert cycle_of([(4, 5), (7, 7)]) == [7]


def test_the_answer_does_not_depend_on_edge_order():
    edges = [(1, 2), (2, 3), (3, 1), (1, 4), (4, 3), (3, 5), (5, 1)]
    answers = {tuple(cycle_of(list(order)) or ()) for order in itertools.permutations(edges)}
    assert answers == {(1, 2, 3)}  # 1-2-3 and 1-4-3 are equally short; 2 < 4


def test_mismatched_lists_are_rejected():
    with pytest.raises(ValueError):
        find_cycle([1, 2], [2])


def test_many_paths_cost_only_what_the_edges_cost():
    """A 200 x 50 layered DAG has 50 * 2^199 paths; it is answered by one linear pass."""
    width, layers = 50, 200
    node = lambda layer, slot: layer * width + slot + 1  # noqa: E731
    edges = [(node(layer, slot), node(layer + 1, (slot + step) % width))
             for layer in range(layers - 1) for slot in range(width) for step in (0, 1)]
    assert cycle_of(edges) is None
    edges.append((node(layers - 1, 0), node(0, 0)))
    cycle = cycle_of(edges)
    assert cycle is not None and cycle[0] == 1 and len(cycle) == layers and is_cycle(edges, cycle)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.integers(1, 12), st.integers(1, 12)), max_size=40))
def test_matches_a_brute_force_reference(edges):
    cycle = cycle_of(edges)
    smallest = brute_force_smallest_cyclic_node(edges)
    if smallest is None:
        assert cycle is None
    else:
        assert cycle is not None and is_cycle(edges, cycle)
        assert cycle[0] == smallest == min(cycle)
        shuffled = edges[:]
        random.Random(len(edges)).shuffle(shuffled)
        assert cycle_of(shuffled) == cycle
