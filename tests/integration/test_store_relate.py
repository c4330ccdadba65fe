"""relate against a real Neo4j: one transaction, 422 naming add[i].from/to, no-ops reported."""

from __future__ import annotations

from datetime import datetime, timezone

import pytest

from graphsvc.clock import fixed_clock
from graphsvc.errors import InvalidInput
from graphsvc.service import GraphService
from tests.integration.locking_support import after_a_locking_write

NOW = datetime(2026, 12, 1, 12, 0, tzinfo=timezone.utc)


@pytest.fixture
def svc(db):
    service = GraphService(db, clock=fixed_clock(NOW))
    service.ingest({"items": [
        {"project_id": "nott", "kind": "task", "content": "t1"},
        {"project_id": "nott", "kind": "epic", "content": "e2"},
        {"project_id": "nott", "kind": "decision", "content": "d3"},
        {"project_id": "nott", "kind": "decision", "content": "d4"},
    ]})
    return service


def edges(db) -> list[tuple[str, str, str]]:
    records = db._driver.execute_query("MATCH (a)-[r]->(b) RETURN type(r), a.id, b.id").records
    return sorted(tuple(r) for r in records)


def blocks(a: str, b: str) -> dict[str, str]:
    return {"type": "BLOCKS", "from": a, "to": b}


def supersedes(a: str, b: str) -> dict[str, str]:
    return {"type": "SUPERSEDES", "from": a, "to": b}


def test_add_and_remove_in_one_call(svc, db):
    assert svc.relate({"add": [blocks("cap-1", "cap-2"), supersedes("cap-4", "cap-3")]}) == {
        "added": 2, "already_present": [], "removed": 0, "not_present": []}
    result = svc.relate({"add": [blocks("cap-2", "cap-1"), blocks("cap-1", "cap-2")],
                         "remove": [supersedes("cap-4", "cap-3"), supersedes("cap-3", "cap-4")]})
    assert result == {"added": 1, "already_present": [blocks("cap-1", "cap-2")],
                      "removed": 1, "not_present": [supersedes("cap-3", "cap-4")]}
    assert edges(db) == [("BLOCKS", "cap-1", "cap-2"), ("BLOCKS", "cap-2", "cap-1")]


def test_adding_the_same_edge_twice_creates_one(svc, db):
    assert svc.relate({"add": [supersedes("cap-4", "cap-3"), supersedes("cap-4", "cap-3")]})["added"] == 1
    assert edges(db) == [("SUPERSEDES", "cap-4", "cap-3")]


def test_removing_only_matches_the_given_type(svc, db):
    svc.relate({"add": [blocks("cap-1", "cap-2")]})
    assert svc.relate({"remove": [supersedes("cap-1", "cap-2")]})["removed"] == 0
    assert edges(db) == [("BLOCKS", "cap-1", "cap-2")]


@pytest.mark.parametrize(
    ("body", "field", "rule"),
    [
        ({"add": [blocks("cap-1", "cap-2"), supersedes("cap-3", "cap-99")]}, "add[1].to", "cap-99 does not exist"),
        ({"add": [blocks("cap-98", "cap-2")]}, "add[0].from", "cap-98 does not exist"),
        ({"remove": [blocks("cap-1", "cap-97")]}, "remove[0].to", "cap-97 does not exist"),
        ({"add": [blocks("cap-1", "cap-3")]}, "add[0].to", "BLOCKS edges join task/epic capsules only"),
        ({"add": [blocks("cap-4", "cap-1")]}, "add[0].from", "'decision'"),
        ({"add": [blocks("cap-1", "cap-1")]}, "add[0]", "cannot BLOCKS itself"),
        ({"add": [{"type": "RELATES", "from": "cap-1", "to": "cap-2"}]}, "add[0].type", "BLOCKS"),
        ({"add": [{"type": "BLOCKS", "from": "cap-1"}]}, "add[0].to", "is required"),
        ({"add": [blocks("cap-1", "x")]}, "add[0].to", "cap-<n>"),
        ({"add": [blocks("cap-1", "cap-2")], "remove": [blocks("cap-1", "cap-2")]}, "add[0]", "also in 'remove'"),
        ({}, None, "at least one edge"),
        ({"add": [], "link": []}, "link", "accepted: add, remove"),
    ],
)
def test_bad_requests_are_422_and_write_nothing(svc, db, body, field, rule):
    with pytest.raises(InvalidInput) as caught:
        svc.relate(body)
    assert caught.value.status == 422
    assert caught.value.field == field
    assert rule in caught.value.message
    assert edges(db) == []


def test_a_bad_edge_rolls_back_the_whole_request(svc, db):
    svc.relate({"add": [supersedes("cap-4", "cap-3")]})
    with pytest.raises(InvalidInput):
        svc.relate({"add": [blocks("cap-1", "cap-2"), blocks("cap-2", "cap-3")],
                    "remove": [supersedes("cap-4", "cap-3")]})
    assert edges(db) == [("SUPERSEDES", "cap-4", "cap-3")]


@pytest.mark.parametrize("change", ["remove BLOCKS", "add SUPERSEDES"])
def test_of_two_requests_changing_one_edge_at_once_the_second_reports_the_first(svc, db, change):
    """Another transaction makes the change first and holds both ends' locks (taken in id order, as
    every relate does); the same change requested meanwhile waits for it and then reports it as
    done already: it looked for the edge only once it held the locks."""
    if change == "remove BLOCKS":
        svc.relate({"add": [blocks("cap-1", "cap-2")]})
        first = "MATCH (:Capsule {id: 'cap-1'})-[r:BLOCKS]->(:Capsule {id: 'cap-2'}) DELETE r"
        request, expected = {"remove": [blocks("cap-1", "cap-2")]}, {
            "added": 0, "already_present": [], "removed": 0, "not_present": [blocks("cap-1", "cap-2")]}
    else:
        first = "MATCH (a:Capsule {id: 'cap-4'}), (b:Capsule {id: 'cap-3'}) CREATE (a)-[:SUPERSEDES]->(b)"
        request, expected = {"add": [supersedes("cap-4", "cap-3")]}, {
            "added": 0, "already_present": [supersedes("cap-4", "cap-3")], "removed": 0, "not_present": []}
    lock_all = ("UNWIND ['cap-1', 'cap-2', 'cap-3', 'cap-4'] AS id MATCH (c:Capsule {id: id}) "
                "SET c.other_lock = true REMOVE c.other_lock")
    answer = after_a_locking_write(db, [lock_all, first], lambda: svc.relate(request))
    assert answer == expected
