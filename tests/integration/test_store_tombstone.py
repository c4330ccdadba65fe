"""tombstone against a real Neo4j: marks, never deletes, idempotent, all-or-nothing."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

from graphsvc.clock import fixed_clock
from graphsvc.errors import InvalidInput, NotFound
from graphsvc.service import GraphService
from tests.integration.locking_support import after_a_locking_write

T0 = datetime(2026, 12, 1, 12, 0, tzinfo=timezone.utc)


@pytest.fixture
def svc(db):
    service = GraphService(db, clock=fixed_clock(T0))
    service.ingest({"items": [{"project_id": "nott", "kind": "fact", "content": f"f{i}"} for i in range(3)]})
    return service


def stamps(db) -> dict[str, datetime | None]:
    records = db._driver.execute_query("MATCH (c:Capsule) RETURN c.id, c.tombstoned_at").records
    return {r[0]: r[1].to_native() if r[1] is not None else None for r in records}


def test_marks_and_never_deletes(svc, db):
    assert svc.tombstone(["cap-2"]) == {"tombstoned": ["cap-2"], "already_tombstoned": []}
    assert stamps(db) == {"cap-1": None, "cap-2": T0, "cap-3": None}


def test_is_idempotent_and_keeps_the_first_time(svc, db):
    svc.tombstone(["cap-2"])
    later = GraphService(db, clock=fixed_clock(T0 + timedelta(days=1)))
    assert later.tombstone(["cap-2", "cap-3", "cap-2"]) == {"tombstoned": ["cap-3"], "already_tombstoned": ["cap-2"]}
    assert stamps(db) == {"cap-1": None, "cap-2": T0, "cap-3": T0 + timedelta(days=1)}


def test_of_two_tombstones_at_once_the_second_reports_the_first(svc, db):
    """Another transaction tombstones cap-2 and holds its lock; a tombstone of cap-2 meanwhile waits
    for it and then answers `already_tombstoned` (it read the node only once it held the lock),
    keeping the first time."""
    earlier = T0 - timedelta(hours=1)
    answer = after_a_locking_write(db, ["MATCH (c:Capsule {id: 'cap-2'}) SET c.tombstoned_at = $at"],
                                   lambda: svc.tombstone(["cap-2"]), at=earlier)
    assert answer == {"tombstoned": [], "already_tombstoned": ["cap-2"]}
    assert stamps(db)["cap-2"] == earlier


def test_unknown_id_is_404_and_nothing_is_marked(svc, db):
    with pytest.raises(NotFound) as caught:
        svc.tombstone(["cap-1", "cap-77", "cap-3"])
    assert caught.value.field == "ids[1]" and "cap-77" in caught.value.message
    assert set(stamps(db).values()) == {None}


@pytest.mark.parametrize(("ids", "field"), [([], "ids"), (["cap-0"], "ids[0]"), ("cap-1", "ids"), ([1], "ids[0]")])
def test_malformed_ids_are_422(svc, db, ids, field):
    with pytest.raises(InvalidInput) as caught:
        svc.tombstone(ids)
    assert caught.value.field == field
    assert set(stamps(db).values()) == {None}
