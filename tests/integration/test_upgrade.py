"""Upgrading a store written by the previous schema versions (v5 and v4) with `graphsvc migrate`.

The store is written through today's service, then put in the shape v5 left it: no capsule carries
its `census` and there are no census tallies (v6 counts a digest's kinds and states from them), the
version node says 5. Or in the shape v4 left it: the same, and its handoffs carry no `agent` (v4
found an agent's previous handoff through its sessions), the version node says 4, and the v4 index
on sessions stands in place of v5's on handoffs. `graphsvc migrate` and `graphsvc verify` run
as a user runs them (the CLI, in a subprocess). Afterwards retrieve, digest, the alias listing,
bootstrap and export answer byte for byte what they answered on the store as written, API keys made
before the upgrade still authenticate and scope, and an agent's next handoff supersedes the one it left
before the upgrade.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import datetime, timedelta, timezone
from typing import Any

import httpx
import pytest

from graphsvc.clock import fixed_clock
from graphsvc.core.canonical import canonical_json
from graphsvc.service import GraphService
from graphsvc.store import migrate as migrate_module
from graphsvc.store.maintain import SCHEMA_VERSION
from graphsvc.store.migrate import migrate, schema_state, verify
from graphsvc.surfaces.http.app import create_app

from .keys_support import bearer, make_key
from .live_server import LiveServer
from .migration_support import CrashingPage, as_v4, as_v5
from .oracle import assert_maintained, describe_drift

NOW = datetime(2026, 12, 1, 12, 0, tzinfo=timezone.utc)
HUGE = 1_000_000

RETRIEVES = (
    {"terms": ["postgres"]},                                    # grounded through the alias pg
    {"terms": ["pg", "cart"], "project_prefix": "shop"},        # the prefixed alias basket
    {"terms": ["legacy"], "project_id": "shop"},                # superseded and expired only: missing_evidence
    {"terms": ["cap-4"]},                                       # the tombstoned-id probe
    {"terms": ["nothing-here"]},                                # abstain
    {"terms": ["handoff", "checkout"], "kinds": ["handoff"]},
)
FENCES = ({}, {"project_id": "shop"}, {"project_prefix": "shop"}, {"project_id": "other"})


def write_store(service: GraphService, clock: list[datetime]) -> dict[str, Any]:
    """Capsules, edges, tombstones, aliases, sessions and keys, written as today's service writes them."""
    def at(minutes: int) -> None:
        clock[0] = NOW - timedelta(minutes=minutes)

    at(600)
    ids = service.ingest({"items": [
        {"project_id": "shop", "kind": "constraint", "content": "Never drop the postgres tables"},
        {"project_id": "shop", "kind": "decision", "content": "Carts live in pg"},
        {"project_id": "shop", "kind": "decision", "content": "legacy carts in files"},
        {"project_id": "shop", "kind": "fact", "content": "a retired fact"},
        {"project_id": "shop/api", "kind": "task", "content": "Build the basket endpoint"},
        {"project_id": "shop/api", "kind": "task", "content": "Document the basket endpoint"},
        {"project_id": "shop", "kind": "fact", "content": "legacy importer", "valid_to": (NOW - timedelta(hours=1)).isoformat()},
        {"project_id": "other", "kind": "failure_pattern", "content": "pg connection storms"},
    ]})["ids"]
    at(300)
    newer = service.ingest({"project_id": "shop", "kind": "decision", "content": "Carts live in postgres",
                            "supersedes": [ids[2]]})["ids"][0]
    service.relate({"add": [{"type": "BLOCKS", "from": ids[4], "to": ids[5]}]})
    service.tombstone([ids[3]])
    service.alias({"term": "postgres", "aliases": ["pg"]})
    service.alias({"term": "cart", "aliases": ["basket"], "project_prefix": "shop"})
    handoffs = []
    for minutes, agent, project, text in ((240, "agent-a", "shop", "checkout half done"),
                                          (180, "agent-b", "shop", "checkout reviewed"),
                                          (120, "agent-a", "other", "storms traced"),
                                          (60, "agent-a", "shop", "checkout done, totals left")):
        at(minutes)
        session = service.session_start({"agent": agent, "project_id": project, "token_budget": 0})["session_id"]
        handoffs.append(service.session_finish({"session_id": session, "handoff": text})["handoff_id"])
    at(500)  # a handoff ingested as a plain capsule: no session, so no agent to record, before or after
    loose = service.ingest({"project_id": "shop", "kind": "handoff", "content": "a handoff without a session"})["ids"][0]
    keys = {"shop_reader": make_key(service, "read", "shop", label="shop-reader"),
            "writer": make_key(service, "write", label="writer"),
            "revoked": make_key(service, "read", label="gone")}
    service.keys_revoke(keys["revoked"]["id"])
    clock[0] = NOW
    return {"ids": ids, "superseder": newer, "handoffs": handoffs, "loose": loose, "keys": keys}


def answers(service: GraphService) -> dict[str, str]:
    """Every read the upgrade must leave unchanged, as canonical JSON."""
    got: dict[str, Any] = {}
    with service.db.longer_timeout():  # cold plans take seconds on a busy machine
        for n, request in enumerate(RETRIEVES):
            got[f"retrieve {n}"] = service.retrieve({**request, "token_budget": HUGE})
        for n, fence in enumerate(FENCES):
            got[f"digest {n}"] = service.digest({**fence, "token_budget": HUGE})
            got[f"bootstrap {n}"] = service.bootstrap({**fence, "terms": ["cart", "postgres"], "token_budget": HUGE})
            got[f"aliases {n}"] = service.aliases(fence)
    got["export"] = list(service.export_lines())
    return {name: canonical_json(value) if not isinstance(value, list) else "\n".join(value)
            for name, value in got.items()}


def indexes(db) -> set[str]:
    return {r["name"] for r in db._driver.execute_query("SHOW INDEXES YIELD name").records}


def cli(target, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "NEO4J_URI": target.uri, "NEO4J_USER": target.user, "NEO4J_PASSWORD": target.password}
    return subprocess.run([sys.executable, "-m", "graphsvc", *args, "--no-progress"], capture_output=True, text=True,
                          timeout=300, env=env)


@pytest.fixture
def written(db) -> tuple[dict[str, Any], dict[str, str]]:
    clock = [NOW]
    service = GraphService(db, clock=lambda: clock[0])
    with db.longer_timeout():  # cold write plans take seconds on a busy machine
        store = write_store(service, clock)
    return store, answers(service)


def capsule_ids(db) -> list[str]:
    """Every capsule id in seq order: the order of migrate's page walk."""
    return [r["id"] for r in db._driver.execute_query("MATCH (c:Capsule) RETURN c.id AS id ORDER BY c.seq").records]


@pytest.mark.parametrize("version", [5, 4])
def test_an_older_store_upgraded_by_graphsvc_migrate_verifies_and_serves_as_written(db, neo4j_target, written,
                                                                                   version):
    store, before = written
    (as_v5 if version == 5 else as_v4)(db)
    ids = capsule_ids(db)
    drift = verify(db)
    expected = {"census": sorted(ids)}
    if version == 4:  # the handoffs that have a session lack its agent; the loose one has none to lack
        expected["agent"] = sorted(store["handoffs"])
    assert {name: sorted(found) for name, found in drift.fields.items()} == expected, describe_drift(db, drift)

    migrated = cli(neo4j_target, "migrate")
    assert migrated.returncode == 0, migrated.stderr
    assert f"migrated schema v{version} -> v{SCHEMA_VERSION}: {len(ids)} capsules" in migrated.stderr
    checked = cli(neo4j_target, "verify")
    assert checked.returncode == 0 and "no drift" in checked.stderr, checked.stderr
    assert_maintained(db, context=f"after the v{version} -> v{SCHEMA_VERSION} migration")
    assert schema_state(db)["version"] == SCHEMA_VERSION
    assert "handoff_agent_project" in indexes(db) and "session_agent_project" not in indexes(db)
    again = cli(neo4j_target, "migrate")
    assert again.returncode == 0 and "nothing to migrate" in again.stderr, again.stderr

    service = GraphService(db, clock=fixed_clock(NOW))
    after = answers(service)
    assert sorted(after) == sorted(before)
    for name in before:
        assert after[name] == before[name], name
    # the answers are the ones these requests must give, not just equal ones
    outcomes = [json.loads(before[f"retrieve {n}"])["outcome"] for n in range(len(RETRIEVES))]
    assert outcomes == ["grounded", "grounded", "missing_evidence", "missing_evidence", "abstain", "grounded"]
    assert ["alias:postgres"] in [row["matched_terms"] for row in json.loads(before["retrieve 0"])["results"]]
    assert json.loads(before["retrieve 3"])["excluded"] == {"tombstoned": 1}
    handoff = json.loads(before["digest 1"])["handoff"]
    assert (handoff["id"], handoff["agent"]) == (store["handoffs"][3], "agent-a")

    keys = store["keys"]
    with LiveServer(create_app(service, require_keys=True)) as live, httpx.Client(base_url=live.url, timeout=60) as http:
        inside = http.post("/v1/memory_retrieve", json={**RETRIEVES[1], "token_budget": HUGE},
                           headers=bearer(keys["shop_reader"]["key"]))
        assert inside.status_code == 200, inside.text
        assert canonical_json({k: v for k, v in inside.json().items() if k != "bookmark"}) == before["retrieve 1"]
        outside = http.post("/v1/memory_digest", json={"project_id": "other"}, headers=bearer(keys["shop_reader"]["key"]))
        assert outside.status_code == 403, outside.text
        gone = http.post("/v1/memory_digest", json={"project_id": "shop"}, headers=bearer(keys["revoked"]["key"]))
        assert gone.status_code == 401, gone.text
        listed = http.get("/v1/aliases", params={"project_id": "shop"}, headers=bearer(keys["shop_reader"]["key"]))
        assert listed.status_code == 200 and listed.json()["aliases"] == json.loads(before["aliases 1"])["aliases"]

        # agent-a's next handoff in shop supersedes the one it left before the upgrade, and only that one
        started = http.post("/v1/sessions", json={"agent": "agent-a", "project_id": "shop"},
                            headers=bearer(keys["writer"]["key"]))
        assert started.status_code == 201, started.text
        finished = http.post(f"/v1/sessions/{started.json()['session_id']}/finish", json={"handoff": "totals done"},
                             headers=bearer(keys["writer"]["key"]))
        assert finished.status_code == 200, finished.text
    new = finished.json()["handoff_id"]
    edges = db._driver.execute_query("MATCH (n:Handoff)-[:SUPERSEDES]->(o) RETURN n.id AS a, o.id AS b ORDER BY n.seq, o.seq")
    assert [(r["a"], r["b"]) for r in edges.records] == [(store["handoffs"][3], store["handoffs"][0]),
                                                         (new, store["handoffs"][3])]
    assert verify(db).clean


def test_an_interrupted_v4_migration_resumes_after_its_last_committed_page(db, written, monkeypatch):
    store, before = written
    as_v4(db)
    ids = capsule_ids(db)
    handoffs = sorted(store["handoffs"] + [store["loose"]], key=lambda i: int(i[4:]))
    page_size = ids.index(handoffs[1]) // 2 + 1  # the first two pages end past a handoff
    monkeypatch.setattr(migrate_module, "PAGE", page_size)
    page = CrashingPage(monkeypatch, "_census_page", crash_on=3)
    with pytest.raises(RuntimeError, match="simulated crash"):
        migrate(db)
    state = schema_state(db)
    assert (state["version"], state["migrating_to"]) == (4, SCHEMA_VERSION)
    walked = ids[:2 * page_size]
    assert state["pages_after"] == int(walked[-1][4:])
    drift = verify(db)
    assert sorted(drift.fields["census"]) == sorted(set(ids) - set(walked))
    assert sorted(drift.fields.get("agent", [])) == sorted(set(store["handoffs"]) - set(walked))
    assert set(store["handoffs"]) & set(walked), "a committed page must have held a handoff"

    page.heal()
    done = migrate(db)
    assert page.calls[0] == state["pages_after"], f"the rerun must resume after the committed page: {page.calls}"
    assert done == {"from": 4, "to": SCHEMA_VERSION, "capsules": len(ids) - len(walked)}
    assert verify(db).clean
    assert answers(GraphService(db, clock=fixed_clock(NOW))) == before
