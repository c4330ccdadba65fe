"""SPEC §3 fail-closed on a live blocks-cycle, on a real Neo4j.

Seed: ready "fails closed on a live blocks-cycle: cycle names one concrete cycle instead of
fabricating a ready answer"; the cycle is ordered in BLOCKS direction, rotated so the smallest
id comes first, the same every time; the search never enumerates paths.
"""

from __future__ import annotations

import math

import pytest

from datetime import timedelta

from graphsvc.core.canonical import canonical_json

from .bootstrap_support import NOW, Store, ready_ids


@pytest.fixture
def s(db):
    return Store(db)


def triangle(s: Store) -> tuple[str, str, str]:
    """a blocks b blocks c blocks a, plus an unrelated free task."""
    a = s.put("task", "a")
    b = s.put("task", "b", blocked_by=[a])
    c = s.put("task", "c", blocked_by=[b], blocks=[a])
    return a, b, c


def test_a_live_cycle_fails_closed_with_the_exact_cycle(s):
    a, b, c = triangle(s)
    s.put("task", "free and would otherwise be the next action", age_days=1)
    pack = s.pack()
    ready = pack["ready"]
    assert ready["state"] == "cycle"
    assert ready["cycle"] == [a, b, c]
    assert "next_action" not in ready and "ready" not in ready
    assert "cycle" in ready["message"]
    assert pack["ready_total"] == 1  # exact: the free task would be ready; failing closed hides it, not the count
    assert pack["handles"] == [a, b, c]
    # the whole body is charged: the envelope and the whole ready section (state, cycle ids, message)
    assert pack["budget"]["used_tokens"] == math.ceil(len(canonical_json(pack)) / 4)
    # the cycle marker is a floor: asked for at exactly floor_tokens, this is the pack, costing exactly that
    floor = pack["budget"]["floor_tokens"]
    at_floor = s.pack(token_budget=floor)
    assert at_floor["ready"] == ready and at_floor["handles"] == [a, b, c]
    assert at_floor["budget"]["used_tokens"] == floor


def test_the_cycle_is_rotated_to_its_smallest_id_in_blocks_direction(s):
    filler = [s.put("task", f"filler {n}", status="done") for n in range(8)]
    x = s.put("task", "x")  # cap-9
    y = s.put("task", "y", blocks=[x])  # cap-10: y blocks x
    z = s.put("task", "z", blocks=[y])  # cap-11: z blocks y
    s.block(x, z)  # x blocks z: x -> z -> y -> x
    assert filler[-1] == "cap-8"
    assert s.pack()["ready"]["cycle"] == [x, z, y]  # cap-9 first (numerically, not as a string)


def test_the_same_cycle_every_time_and_the_smallest_cyclic_node_wins(s):
    p = s.put("task", "p")
    q = s.put("task", "q", blocked_by=[p])
    r = s.put("task", "r", blocked_by=[q])
    s.block(r, p)  # p -> q -> r -> p
    s.block(q, p)  # and the shorter p -> q -> p
    late1 = s.put("task", "late 1")
    late2 = s.put("task", "late 2", blocked_by=[late1], blocks=[late1])
    first = s.pack()["ready"]["cycle"]
    assert first == [p, q]  # the shortest cycle through the smallest node on any cycle
    assert all(s.pack()["ready"]["cycle"] == first for _ in range(5))
    assert late2 not in first


def test_lexicographically_smallest_among_equally_short_cycles(s):
    a = s.put("task", "a")
    c = s.put("task", "c")
    b = s.put("task", "b")
    s.block(a, b)
    s.block(a, c)
    s.block(b, a)
    s.block(c, a)  # a -> b -> a and a -> c -> a: same length, c has the smaller id
    assert s.pack()["ready"]["cycle"] == [a, c]


@pytest.mark.parametrize("repair", ["done", "supersede", "tombstone"])
def test_the_cycle_is_repaired_by_done_supersede_or_tombstone(s, repair):
    a, b, c = triangle(s)
    assert s.pack()["ready"]["state"] == "cycle"
    if repair == "done":
        s.done(b)
    elif repair == "supersede":
        replacement = s.put("decision", "b is replaced by a decision")
        s.supersede(replacement, b)
    else:
        s.tombstone(b)
    pack = s.pack()
    assert pack["ready"]["state"] == "next_action"
    assert ready_ids(pack) == [c]  # b no longer blocks c; a still waits for c


def test_a_supersede_by_a_tombstoned_capsule_does_not_repair_the_cycle(s):
    a, b, c = triangle(s)
    ghost = s.put("decision", "would replace b")
    s.supersede(ghost, b)
    s.tombstone(ghost)
    assert s.pack()["ready"]["cycle"] == [a, b, c]


def test_an_expired_task_still_closes_the_cycle(s):
    """Live means open, not tombstoned, not superseded: expiry does not unblock anything."""
    a = s.put("task", "a", valid_to=(NOW - timedelta(days=1)).isoformat())
    b = s.put("task", "b", blocked_by=[a], blocks=[a])
    assert s.pack()["ready"]["cycle"] == [a, b]


def build_layered_dag(s: Store, layers: int, width: int) -> list[list[str]]:
    """layers x width tasks; each task blocks tasks (slot, slot + 1 mod width) of the next layer.

    Created last layer first, so EVERY edge goes from a newer to an older capsule (the case
    that makes the cycle check look at the edges at all). width * 2^(layers-1) paths.
    """
    grid: list[list[str]] = [[] for _ in range(layers)]
    items = [{"project_id": "dag", "kind": "task", "content": f"L{layer} S{slot}"}
             for layer in reversed(range(layers)) for slot in range(width)]
    made: list[str] = []
    for start in range(0, len(items), 1000):
        made += s.many(items[start:start + 1000])
    for position, capsule_id in enumerate(made):
        grid[layers - 1 - position // width].append(capsule_id)
    edges = [{"type": "BLOCKS", "from": grid[layer][slot], "to": grid[layer + 1][(slot + step) % width]}
             for layer in range(layers - 1) for slot in range(width) for step in (0, 1)]
    service = s.at(NOW)
    for start in range(0, len(edges), 1000):
        service.relate({"add": edges[start:start + 1000]})
    return grid


def test_a_10000_task_layered_dag_with_astronomically_many_paths(s):
    layers, width = 100, 100
    grid = build_layered_dag(s, layers, width)  # 100 * 2^99 paths, 19,800 edges
    pack = s.pack(project_id="dag")
    assert pack["ready"]["state"] == "next_action"
    assert pack["ready_total"] == width  # only layer 0 is unblocked
    assert set(ready_ids(pack)) <= set(grid[0])

    # Close ONE cycle: the last layer's slot 3 blocks layer 0's slot 0.
    closing_from, closing_to = grid[layers - 1][3], grid[0][0]
    s.block(closing_from, closing_to)
    cycle = s.pack(project_id="dag")["ready"]["cycle"]
    # The smallest node on any cycle is closing_from (the last layer was created first). The
    # shortest cycle through it has `layers` nodes; among those, the lexicographically smallest
    # stays in slot 0 as long as it can and steps to slots 1, 2, 3 at the very end.
    slots = [0] * (layers - 3) + [1, 2, 3]
    expected = [closing_from] + [grid[layer][slot] for layer, slot in enumerate(slots)][:-1]
    assert cycle == expected
    assert len(cycle) == layers

    s.tombstone(closing_to)
    repaired = s.pack(project_id="dag")
    assert repaired["ready"]["state"] == "next_action"
    assert repaired["ready_total"] == width - 1  # layer 0 without slot 0; layer 1 still waits for its other blocker
