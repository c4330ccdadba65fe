"""update against a real Neo4j: allowed fields, kind rules, headline re-derivation, 404/409."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

from graphsvc.clock import fixed_clock
from graphsvc.errors import Conflict, InvalidInput, NotFound
from graphsvc.service import GraphService

T0 = datetime(2026, 12, 1, 12, 0, tzinfo=timezone.utc)
T1 = T0 + timedelta(hours=3)


@pytest.fixture
def svc(db):
    GraphService(db, clock=fixed_clock(T0)).ingest({"items": [
        {"project_id": "nott", "kind": "task", "content": "Write the parser\nwith tests"},
        {"project_id": "nott", "kind": "fact", "content": "body", "headline": "Chosen headline"},
        {"project_id": "nott", "kind": "fact", "content": "expiring", "valid_to": "2027-01-01T00:00:00Z"},
    ]})
    return GraphService(db, clock=fixed_clock(T1))


def test_status_and_tier_change_and_updated_at_is_bumped(svc):
    capsule = svc.update("cap-1", {"status": "done", "tier": "archived"})
    assert capsule["status"] == "done"
    assert capsule["tier"] == "archived"
    assert capsule["created_at"] == "2026-12-01T12:00:00.000Z"
    assert capsule["updated_at"] == "2026-12-01T15:00:00.000Z"
    assert capsule["id"] == "cap-1" and capsule["edges"] == {"out": [], "in": []}


def test_content_rederives_a_derived_headline(svc):
    capsule = svc.update("cap-1", {"content": "\nParse the lexer output\nmore"})
    assert capsule["headline"] == "Parse the lexer output"


def test_content_keeps_a_chosen_headline(svc):
    assert svc.update("cap-2", {"content": "new body"})["headline"] == "Chosen headline"


def test_headline_and_content_together_use_the_given_headline(svc):
    capsule = svc.update("cap-1", {"content": "x", "headline": "Mine"})
    assert (capsule["headline"], capsule["content"]) == ("Mine", "x")


def test_valid_to_set_and_cleared(svc):
    capsule = svc.update("cap-3", {"valid_to": "2026-12-01T14:00:00+01:00"})
    assert capsule["valid_to"] == "2026-12-01T13:00:00.000Z"
    assert capsule["expired"] is True  # 13:00 <= now (15:00)
    capsule = svc.update("cap-3", {"clear_valid_to": True})
    assert "valid_to" not in capsule and capsule["expired"] is False


@pytest.mark.parametrize(
    ("capsule_id", "body", "field", "rule"),
    [
        ("cap-2", {"status": "done"}, "status", "only task and epic"),
        ("cap-1", {"status": "closed"}, "status", "'open' or 'done'"),
        ("cap-1", {"tier": "hot"}, "tier", "'active'"),
        ("cap-1", {}, None, "send at least one"),
        ("cap-1", {"content": ""}, "content", "must not be empty"),
        ("cap-1", {"headline": "h" * 121}, "headline", "at most 120"),
        ("cap-1", {"valid_to": None}, "valid_to", "clear_valid_to"),
        ("cap-1", {"valid_to": "2027-01-01T00:00:00Z", "clear_valid_to": True}, None, "not both"),
        ("cap-1", {"kind": "fact"}, "kind", "accepted:"),
        ("nope", {"tier": "stale"}, "id", "cap-<n>"),
    ],
)
def test_invalid_updates_are_422_and_change_nothing(svc, db, capsule_id, body, field, rule):
    with pytest.raises(InvalidInput) as caught:
        svc.update(capsule_id, body)
    assert caught.value.field == field
    assert rule in caught.value.message
    stamps = {r[0].to_native() for r in db._driver.execute_query("MATCH (c:Capsule) RETURN c.updated_at").records}
    assert stamps == {T0}


def test_unknown_id_is_404_naming_it(svc):
    with pytest.raises(NotFound) as caught:
        svc.update("cap-42", {"tier": "stale"})
    assert caught.value.status == 404 and "cap-42" in caught.value.message


def test_tombstoned_capsule_is_409(svc):
    svc.tombstone(["cap-1"])
    with pytest.raises(Conflict) as caught:
        svc.update("cap-1", {"status": "done"})
    assert caught.value.status == 409
    assert "cap-1 is tombstoned" in caught.value.message
    assert svc.get(["cap-1"])["capsules"][0]["status"] == "open"
