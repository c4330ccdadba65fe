"""Sessions and handoff (SPEC §11) against a real Neo4j: start returns the digest, finish stores a
handoff capsule that supersedes the agent's previous one in the project, digest leads with it,
bootstrap never shows it, finishing is idempotent, and the surfaces agree."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest

from graphsvc.core.canonical import canonical_json
from graphsvc.errors import Conflict, InvalidInput, NotFound
from graphsvc.service import GraphService
from graphsvc.store.idempotency import IdempotencyKey
from tests.integration.service_support import NOW


@pytest.fixture
def svc(svc) -> GraphService:
    svc.ingest({"items": [
        {"project_id": "p", "kind": "constraint", "content": "Never drop tables"},
        {"project_id": "p", "kind": "task", "content": "Design the cart"},
        {"project_id": "p", "kind": "decision", "content": "Carts live in Postgres"},
    ]})
    return svc


def handoff_of(db, capsule_id: str) -> dict:
    record = db._driver.execute_query(
        "MATCH (s:Session)-[:HANDED_OFF]->(h:Capsule {id: $id}) RETURN labels(h) AS labels, h.kind AS kind, "
        "h.content AS content, h.superseded AS superseded, s.id AS session", id=capsule_id).records[0]
    return dict(record)


def test_start_returns_the_projects_digest_and_finish_stores_a_handoff(svc, db, clock):
    started = svc.session_start({"agent": "agent-1", "project_id": "p"})
    assert started["session_id"] == "ses-1"
    with svc.db.longer_timeout():
        assert started["digest"] == svc.digest({"project_id": "p"})
        pack_before = canonical_json(svc.bootstrap({"project_id": "p", "terms": ["cart", "handoff"]}))
    assert "handoff" not in started["digest"]
    clock.now = NOW + timedelta(hours=1)
    done = svc.session_finish({"session_id": "ses-1", "handoff": "Cart schema half done", "next_steps": ["add totals"]})
    assert done == {"session_id": "ses-1", "handoff_id": "cap-4"}
    stored = handoff_of(db, "cap-4")
    assert stored == {"labels": ["Capsule", "Handoff"], "kind": "handoff", "superseded": False, "session": "ses-1",
                      "content": "Cart schema half done\n\nNext steps:\n- add totals"}
    clock.now = NOW
    with svc.db.longer_timeout():  # a handoff never enters a bootstrap section: the same pack, byte for byte
        assert canonical_json(svc.bootstrap({"project_id": "p", "terms": ["cart", "handoff"]})) == pack_before
    later = svc.session_start({"agent": "agent-2", "project_id": "p"})
    assert later["session_id"] == "ses-2"
    assert later["digest"]["handoff"] == {"agent": "agent-1", "content": stored["content"], "headline":
                                          "Cart schema half done", "id": "cap-4", "project_id": "p",
                                          "session_id": "ses-1", "updated_at": "2026-12-01T13:00:00.000Z"}
    assert later["digest"]["handles"][0] == "cap-4"
    found = svc.retrieve({"terms": ["cart schema"], "kinds": ["handoff"]})
    assert [row["id"] for row in found["results"]] == ["cap-4"]


def test_a_handoff_supersedes_the_same_agents_previous_one_in_that_project_only(svc, db):
    first = svc.session_start({"agent": "a", "project_id": "p"})["session_id"]
    other = svc.session_start({"agent": "b", "project_id": "p"})["session_id"]
    elsewhere = svc.session_start({"agent": "a", "project_id": "q"})["session_id"]
    h1 = svc.session_finish({"session_id": first, "handoff": "a one"})["handoff_id"]
    hb = svc.session_finish({"session_id": other, "handoff": "b one"})["handoff_id"]
    hq = svc.session_finish({"session_id": elsewhere, "handoff": "a in q"})["handoff_id"]
    second = svc.session_start({"agent": "a", "project_id": "p"})
    assert second["digest"]["handoff"]["id"] == hb  # the newest live handoff in p (another agent's counts too)
    h2 = svc.session_finish({"session_id": second["session_id"], "handoff": "a two"})["handoff_id"]
    assert handoff_of(db, h1)["superseded"] is True
    assert handoff_of(db, hb)["superseded"] is False and handoff_of(db, hq)["superseded"] is False
    edges = db._driver.execute_query("MATCH (a)-[:SUPERSEDES]->(b) RETURN a.id AS a, b.id AS b").records
    assert [(r["a"], r["b"]) for r in edges] == [(h2, h1)]
    with svc.db.longer_timeout():
        digest = svc.digest({"project_id": "p"})
    assert digest["handoff"]["id"] == h2  # the newest live one (same instant: the newer id)
    assert digest["counts"]["handoff"] == {"live": 2, "superseded": 1, "expired": 0, "tombstoned": 0}


def test_finishing_twice_is_idempotent_and_a_different_finish_is_a_409(svc, db):
    session = svc.session_start({"agent": "a", "project_id": "p"})["session_id"]
    body = {"session_id": session, "handoff": "done for today"}
    first = svc.session_finish(dict(body))
    assert svc.session_finish(dict(body)) == first
    count = db._driver.execute_query("MATCH (h:Handoff) RETURN count(h) AS n").records[0]["n"]
    assert count == 1
    with pytest.raises(Conflict) as caught:
        svc.session_finish({**body, "handoff": "something else"})
    assert caught.value.field == "session_id" and session in caught.value.message
    with pytest.raises(NotFound) as missing:
        svc.session_finish({"session_id": "ses-99", "handoff": "x"})
    assert missing.value.field == "session_id" and "ses-99" in missing.value.message


@pytest.mark.parametrize(("operation", "request_body", "field_name"), [
    ("session_start", {"project_id": "p"}, "agent"),
    ("session_start", {"agent": "a b", "project_id": "p"}, "agent"),
    ("session_start", {"agent": "a", "project_id": "/p"}, "project_id"),
    ("session_finish", {"session_id": "cap-1", "handoff": "x"}, "session_id"),
    ("session_finish", {"session_id": "ses-1", "handoff": "  "}, "handoff"),
    ("session_finish", {"session_id": "ses-1", "handoff": "x", "next_steps": [""]}, "next_steps[0]"),
])
def test_bad_session_input_is_a_422_naming_the_field(svc, operation, request_body, field_name):
    with pytest.raises(InvalidInput) as caught:
        getattr(svc, operation)(request_body)
    assert caught.value.field == field_name


def test_session_writes_take_idempotency_keys(svc):
    key = IdempotencyKey(caller="", key="start-1")
    started = svc.session_start({"agent": "a", "project_id": "p"}, idempotency=key)
    again = IdempotencyKey(caller="", key="start-1")
    assert svc.session_start({"agent": "a", "project_id": "p"}, idempotency=again) == started and again.replayed
    finish_key = IdempotencyKey(caller="", key="finish-1")
    done = svc.session_finish({"session_id": started["session_id"], "handoff": "h"}, idempotency=finish_key)
    replay = IdempotencyKey(caller="", key="finish-1")
    assert svc.session_finish({"session_id": started["session_id"], "handoff": "h"}, idempotency=replay) == done
    assert replay.replayed


def test_a_handoff_travels_with_export_and_import(svc, db):
    session = svc.session_start({"agent": "a", "project_id": "p"})["session_id"]
    svc.session_finish({"session_id": session, "handoff": "state of things"})
    lines = list(svc.export_lines())
    assert json.loads(lines[3])["capsule"]["kind"] == "handoff"
    db.wipe_all()
    svc.import_lines(lines)
    assert list(svc.export_lines()) == lines


def test_a_restored_handoff_is_superseded_by_the_agents_next_finish(svc, db):
    """Sessions are not exported: the handoff carries its agent, and the next finish finds it on the capsules."""
    mine = svc.session_start({"agent": "a", "project_id": "p"})["session_id"]
    theirs = svc.session_start({"agent": "b", "project_id": "p"})["session_id"]
    old = svc.session_finish({"session_id": mine, "handoff": "before the restore"})["handoff_id"]
    other = svc.session_finish({"session_id": theirs, "handoff": "b before the restore"})["handoff_id"]
    lines = list(svc.export_lines())
    exported = {json.loads(line)["capsule"]["id"]: json.loads(line)["capsule"] for line in lines if "capsule" in line}
    assert (exported[old]["agent"], exported[other]["agent"]) == ("a", "b")
    assert all("agent" not in capsule for capsule_id, capsule in exported.items() if capsule_id not in (old, other))

    db.wipe_all()
    svc.import_lines(lines)
    assert db._driver.execute_query("MATCH (s:Session) RETURN count(s) AS n").records[0]["n"] == 0
    with svc.db.longer_timeout():
        restored = svc.digest({"project_id": "p"})["handoff"]
    assert restored["id"] == other and restored["agent"] == "b" and "session_id" not in restored

    again = svc.session_start({"agent": "a", "project_id": "p"})["session_id"]
    new = svc.session_finish({"session_id": again, "handoff": "after the restore"})["handoff_id"]
    edges = db._driver.execute_query("MATCH (a)-[:SUPERSEDES]->(b) RETURN a.id AS a, b.id AS b").records
    assert [(r["a"], r["b"]) for r in edges] == [(new, old)]  # the other agent's handoff stays live
    got = {capsule["id"]: capsule for capsule in svc.get([old, new, other])["capsules"]}
    assert (got[old]["superseded"], got[other]["superseded"], got[new]["superseded"]) == (True, False, False)
    assert got[new]["agent"] == "a"


def test_an_agent_is_exported_on_handoffs_only(svc):
    session = svc.session_start({"agent": "a", "project_id": "p"})["session_id"]
    svc.session_finish({"session_id": session, "handoff": "state"})
    lines = list(svc.export_lines())
    tampered = [json.loads(line) for line in lines]
    tampered[0]["capsule"]["agent"] = "a"  # the constraint
    with pytest.raises(InvalidInput) as refused:
        svc.import_lines([json.dumps(record) for record in tampered])
    assert refused.value.field == "line[1].capsule" and "handoff" in refused.value.message
    tampered[0]["capsule"].pop("agent")
    tampered[3]["capsule"]["agent"] = "not an agent"
    with pytest.raises(InvalidInput) as bad:
        svc.import_lines([json.dumps(record) for record in tampered])
    assert bad.value.field == "line[4].capsule.agent"


def test_http_routes_start_and_finish(db):
    from tests.integration.live_server import started_client

    from graphsvc.clock import fixed_clock
    from graphsvc.surfaces.http.app import create_app

    with started_client(create_app(GraphService(db, clock=fixed_clock(NOW)))) as http:
        started = http.post("/v1/sessions", json={"agent": "a", "project_id": "p"})
        assert started.status_code == 201 and started.json()["session_id"] == "ses-1"
        assert started.json()["digest"]["counts"] == {}
        done = http.post("/v1/sessions/ses-1/finish", json={"handoff": "bye"}, headers={"Idempotency-Key": "f-1"})
        assert done.status_code == 200 and done.json() == {"session_id": "ses-1", "handoff_id": "cap-1"}
        assert http.post("/v1/sessions/ses-1/finish", json={"handoff": "other"}).status_code == 409
        assert http.post("/v1/sessions/ses-7/finish", json={"handoff": "bye"}).status_code == 404
        bad = http.post("/v1/sessions/nope/finish", json={"handoff": "bye"})
        assert bad.status_code == 422 and bad.json()["error"]["field"] == "session_id"
        digest = http.post("/v1/memory_digest", json={"project_id": "p"}).json()
        assert digest["handoff"]["id"] == "cap-1"


def test_a_handoff_too_long_for_one_capsule_is_a_422_naming_the_rule(svc):
    opened = svc.session_start({"agent": "a", "project_id": "p"})
    with pytest.raises(InvalidInput) as refused:
        svc.session_finish({"session_id": opened["session_id"], "handoff": "x" * 65_000,
                            "next_steps": ["y" * 400] * 50})
    assert "one capsule" in refused.value.message
    # nothing was written: the session can still be finished
    assert svc.session_finish({"session_id": opened["session_id"], "handoff": "done"})["handoff_id"]
