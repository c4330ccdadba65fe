"""Ingest against a real Neo4j: all-or-nothing batches, edges, 422 naming items[i].field, and the id counter."""

from __future__ import annotations

import threading
from datetime import datetime, timezone

import pytest

from graphsvc.clock import fixed_clock
from graphsvc.store.db import Database
from graphsvc.errors import InvalidInput
from graphsvc.service import GraphService

NOW = datetime(2026, 12, 1, 12, 0, tzinfo=timezone.utc)


def count(db, query: str) -> int:
    return db._driver.execute_query(query).records[0][0]


def counter_value(db) -> int | None:
    records = db._driver.execute_query("MATCH (k:IdCounter {name: 'capsule'}) RETURN k.value").records
    return records[0][0] if records else None


@pytest.fixture
def svc(db):
    return GraphService(db, clock=fixed_clock(NOW))


def task(content: str = "do it", **extra):
    return {"project_id": "nott", "kind": "task", "content": content, **extra}


def test_single_and_batch_ids_are_consecutive(svc):
    assert svc.ingest(task()) == {"ids": ["cap-1"]}
    assert svc.ingest({"items": [task("a"), task("b")]}) == {"ids": ["cap-2", "cap-3"]}


def test_a_1000_item_batch_with_one_bad_item_writes_nothing(svc, db):
    svc.ingest(task("existing"))
    items = [task(f"item {i}") for i in range(1000)]
    items[737] = {"project_id": "nott/", "kind": "task", "content": "bad project"}
    with pytest.raises(InvalidInput) as caught:
        svc.ingest({"items": items})
    assert caught.value.status == 422
    assert caught.value.field == "items[737].project_id"
    assert "must not start or end with '/'" in caught.value.message
    assert count(db, "MATCH (c:Capsule) RETURN count(c)") == 1
    assert counter_value(db) == 1


def test_a_1000_item_batch_with_one_unknown_reference_writes_nothing(svc, db):
    """The bad item is only detectable in Neo4j (the reference check runs inside the write transaction)."""
    svc.ingest(task("existing"))
    items = [task(f"item {i}", blocked_by=["cap-1"]) for i in range(1000)]
    items[999] = task("dangling", supersedes=["cap-5000"])
    with pytest.raises(InvalidInput) as caught:
        svc.ingest({"items": items})
    assert caught.value.field == "items[999].supersedes[0]"
    assert count(db, "MATCH (c:Capsule) RETURN count(c)") == 1
    assert count(db, "MATCH ()-[r]->() RETURN count(r)") == 0
    assert counter_value(db) == 1


def test_a_batch_of_1001_items_is_refused(svc, db):
    with pytest.raises(InvalidInput) as caught:
        svc.ingest({"items": [task()] * 1001})
    assert caught.value.field == "items"
    assert count(db, "MATCH (c:Capsule) RETURN count(c)") == 0


def test_unknown_reference_writes_nothing_and_burns_no_id(svc, db):
    svc.ingest(task("first"))
    with pytest.raises(InvalidInput) as caught:
        svc.ingest({"items": [task("ok"), task("bad", blocked_by=["cap-1", "cap-99"])]})
    assert caught.value.field == "items[1].blocked_by[1]"
    assert "cap-99 does not exist" in caught.value.message
    assert count(db, "MATCH (c:Capsule) RETURN count(c)") == 1
    assert svc.ingest(task("next")) == {"ids": ["cap-2"]}


def test_blocks_reference_to_a_non_task_is_refused(svc):
    svc.ingest({"project_id": "nott", "kind": "fact", "content": "a fact"})
    with pytest.raises(InvalidInput) as caught:
        svc.ingest(task("t", blocks=["cap-1"]))
    assert caught.value.field == "blocks[0]"
    assert "task/epic capsules only" in caught.value.message


@pytest.mark.parametrize(
    ("item", "field", "rule"),
    [
        ({"project_id": "nott", "kind": "note", "content": "x"}, "items[0].kind", "Input should be"),
        ({"project_id": "nott", "kind": "fact", "content": "  "}, "items[0].content", "must not be empty"),
        ({"project_id": "nott", "kind": "fact", "content": "x", "status": "open"}, "items[0].status",
         "status is only"),
        ({"project_id": "nott", "kind": "decision", "content": "x", "blocks": ["cap-1"]}, "items[0].blocks",
         "cannot block or be blocked"),
        ({"project_id": "nott", "kind": "doc", "content": "x", "blocked_by": ["cap-1"]}, "items[0].blocked_by",
         "cannot block or be blocked"),
        ({"project_id": "a//b", "kind": "fact", "content": "x"}, "items[0].project_id", "empty segment"),
        ({"project_id": "nott", "kind": "fact", "content": "x", "colour": 1}, "items[0].colour", "accepted:"),
        ({"project_id": "nott", "kind": "fact", "content": "x", "headline": "h" * 121}, "items[0].headline",
         "at most 120"),
        ({"project_id": "nott", "kind": "fact", "content": "x", "valid_to": "2026-12-01T00:00:00"},
         "items[0].valid_to", "timezone"),
    ],
)
def test_invalid_items_name_index_field_and_rule(svc, db, item, field, rule):
    with pytest.raises(InvalidInput) as caught:
        svc.ingest({"items": [item]})
    assert caught.value.field == field
    assert rule in caught.value.message
    assert count(db, "MATCH (c:Capsule) RETURN count(c)") == 0


def test_edges_are_created_in_the_same_transaction(svc, db):
    svc.ingest({"items": [task("a"), task("b"), {"project_id": "nott", "kind": "decision", "content": "d1"}]})
    svc.ingest({"items": [task("c", blocked_by=["cap-1"], blocks=["cap-2"]),
                          {"project_id": "nott", "kind": "decision", "content": "d2", "supersedes": ["cap-3"]}]})
    edges = db._driver.execute_query(
        "MATCH (a)-[r]->(b) RETURN type(r) AS t, a.id AS a, b.id AS b ORDER BY t, a, b").records
    assert [(r["t"], r["a"], r["b"]) for r in edges] == [
        ("BLOCKS", "cap-1", "cap-4"), ("BLOCKS", "cap-4", "cap-2"), ("SUPERSEDES", "cap-5", "cap-3")]


def test_headline_is_derived_from_the_first_non_empty_line(svc, db):
    svc.ingest({"project_id": "nott", "kind": "fact", "content": "\n\n  Use UTC everywhere  \nbecause..."})
    assert count(db, "MATCH (c:Capsule {headline: 'Use UTC everywhere'}) RETURN count(c)") == 1


def test_concurrent_writers_get_unique_gap_free_ids(neo4j_target, db):
    """8 clients, each with its own driver, ingest batches at the same time: ids are exactly cap-1..cap-N."""
    clients, batches, size = 8, 6, 25
    errors: list[BaseException] = []
    got: list[str] = []
    lock = threading.Lock()
    start = threading.Barrier(clients)

    def client(n: int) -> None:
        own = Database(neo4j_target.uri, neo4j_target.user, neo4j_target.password, timeout=60.0)
        service = GraphService(own, clock=fixed_clock(NOW))
        try:
            start.wait()
            for b in range(batches):
                ids = service.ingest({"items": [task(f"client {n} batch {b} item {i}") for i in range(size)]})["ids"]
                assert ids == [f"cap-{int(ids[0][4:]) + i}" for i in range(size)], "a batch's ids are consecutive"
                with lock:
                    got.extend(ids)
        except BaseException as exc:  # surfaced below
            errors.append(exc)
        finally:
            own.close()

    threads = [threading.Thread(target=client, args=(n,)) for n in range(clients)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors, errors
    total = clients * batches * size
    assert sorted(got, key=lambda i: int(i[4:])) == [f"cap-{n}" for n in range(1, total + 1)]
    stored = [r[0] for r in db._driver.execute_query("MATCH (c:Capsule) RETURN c.seq ORDER BY c.seq").records]
    assert stored == list(range(1, total + 1))
    assert counter_value(db) == total
