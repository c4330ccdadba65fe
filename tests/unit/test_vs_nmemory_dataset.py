"""bench.vs_nmemory's dataset: deterministic, loadable into both products as it is, and its shapes find terms."""

from __future__ import annotations

from bench.vs_nmemory import FENCED, build, edges, shapes


def test_the_dataset_is_the_same_for_the_same_size():
    assert build(400) == build(400)
    assert build(400) != build(400, seed=8)


def test_every_content_is_unique_so_nmemory_stores_every_capsule():
    # nmemory collapses a capsule whose content equals a stored one's: both stores hold `size` capsules
    items = build(1000)
    assert len({item.content for item in items}) == len(items) == 1000


def test_the_dataset_mixes_the_pack_kinds_with_edges_and_expired_capsules():
    items = build(1000)
    kinds = {item.kind for item in items}
    assert {"constraint", "decision", "failure_pattern", "task", "fact"} <= kinds
    found = edges(items)
    assert any(kind == "BLOCKS" for kind, _, _ in found) and any(kind == "SUPERSEDES" for kind, _, _ in found)
    assert any(item.expired for item in items)
    assert any(item.project_id == FENCED for item in items)


def test_edges_join_earlier_capsules_of_the_same_project_and_kind():
    items = build(1000)
    for kind, a, b in edges(items):
        assert items[a].project_id == items[b].project_id
        if kind == "BLOCKS":  # blocker first: an acyclic DAG of tasks
            assert a < b and items[a].kind == items[b].kind == "task"
        else:  # the newer decision supersedes an older one
            assert a > b and items[a].kind == items[b].kind == "decision"
    assert all(not item.expired or item.kind in ("constraint", "decision") for item in items)


def test_the_shapes_cover_both_fences_with_and_without_terms_that_occur_in_the_store():
    items = build(1000)
    requests = shapes(items)
    assert [("project_id" in body, "terms" in body) for body in requests.values()] == [
        (False, False), (False, True), (True, False), (True, True)]
    words = {word.lower() for item in items for word in item.content.split()}
    terms = requests["store+terms"]["terms"]
    assert len(terms) == 2 and set(terms) <= words
    assert requests["project+terms"]["terms"] == terms


def test_every_task_takes_part_in_a_blocks_edge():
    # nmemory's ready set holds only BLOCKS participants: an unlinked task would be ready in graphsvc only
    for size in (300, 500, 1000):
        items = build(size)
        linked = {index for kind, a, b in edges(items) if kind == "BLOCKS" for index in (a, b)}
        tasks = {index for index, item in enumerate(items) if item.kind == "task"}
        assert tasks and tasks <= linked
