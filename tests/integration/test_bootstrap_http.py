"""POST /v1/memory_bootstrap end to end on a real Neo4j: determinism, round trips, OpenAPI, CLI.

Seed: same store + same request + same clock gives byte-identical JSON; one call composes
the pack (round trips are counted on a real Database subclass, not a mock).
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from graphsvc.clock import fixed_clock
from graphsvc.core.canonical import canonical_json
from graphsvc.surfaces.http.app import create_app
from graphsvc.service import GraphService

from .bootstrap_support import NOW, CountingDatabase, Store
from .live_server import started_client


def populate(s: Store) -> None:
    for n in range(14):
        s.put("constraint", f"Constraint {n}: never do thing {n}", age_days=n, project_id="nott/x" if n % 2 else "nott")
        s.put("decision", f"Decision {n}: we use tool {n}", age_days=n)
        s.put("failure_pattern", f"Trap {n}: tool {n} breaks", age_days=n, tier="stale" if n % 3 == 0 else "active")
    first = s.put("task", "Task head")
    for n in range(13):
        s.put("task", f"Task {n} Café", age_days=n / 2, blocked_by=[first] if n % 4 == 0 else [])


@pytest.fixture
def client(db):
    populate(Store(db))
    with started_client(create_app(GraphService(db, clock=fixed_clock(NOW)))) as c:
        yield c


REQUESTS = [
    {},
    {"project_prefix": "nott", "terms": ["tool", "cafe", "never do"], "token_budget": 700},
    {"project_id": "nott", "token_budget": 0},
    {"project_prefix": "nott", "terms": ["zzz"], "token_budget": 40},
]


@pytest.mark.parametrize("body", REQUESTS)
def test_same_store_request_and_clock_give_byte_identical_bodies(client, body):
    first = client.post("/v1/memory_bootstrap", json=body)
    assert first.status_code == 200
    for _ in range(3):
        again = client.post("/v1/memory_bootstrap", json=body)
        assert again.content == first.content
    assert first.headers["content-type"].startswith("application/json")


def test_the_body_is_the_service_pack_with_sections_in_the_fixed_order(client, db):
    body = {"project_prefix": "nott", "token_budget": 100_000}
    response = client.post("/v1/memory_bootstrap", json=body)
    http = response.json()
    direct = GraphService(db, clock=fixed_clock(NOW)).bootstrap(body)
    assert http == direct
    assert response.content == canonical_json(direct).encode("utf-8")  # the canonical text, byte for byte
    sections = [key for key in http if key in ("constraints", "ready", "decisions", "traps", "handles")]
    assert sections == ["constraints", "ready", "decisions", "traps", "handles"]
    assert http["advisory"] == "ADVISORY_NOT_AUTHORITY"
    assert http["as_of"] == "2026-07-01T12:00:00Z"


def test_a_different_clock_can_change_the_pack_but_not_its_shape(db):
    populate(Store(db))
    early = GraphService(db, clock=fixed_clock(NOW)).bootstrap({})
    late = GraphService(db, clock=fixed_clock(NOW.replace(year=2027))).bootstrap({})
    assert early["as_of"] != late["as_of"]
    assert list(early) == list(late)


def test_a_pack_is_at_most_4_round_trips(neo4j_target, db):
    counting = CountingDatabase(neo4j_target.uri, neo4j_target.user, neo4j_target.password, timeout=30.0)
    try:
        s = Store(counting)
        populate(s)
        a = s.put("task", "cycle a")
        s.put("task", "cycle b", blocked_by=[a], blocks=[a])
        service = GraphService(counting, clock=fixed_clock(NOW))
        service.ensure_schema()  # once per process at start-up (schema, migration): not the pack's cost
        for body in [{}, {"terms": ["tool", "cafe"]}, {"project_prefix": "nott", "token_budget": 0}]:
            counting.round_trips = counting.statements = 0
            pack = service.bootstrap(body)
            assert body.get("token_budget") == 0 or pack["ready"]["state"] == "cycle"
            assert counting.round_trips <= 4
            assert counting.statements <= 4
            # one read transaction: the head, then the section statement for the constraints and for the rest
            assert (counting.round_trips, counting.statements) == (1, 3)
    finally:
        counting.close()


def test_openapi_documents_the_route_with_the_request_schema(client):
    document = client.get("/openapi.json").json()
    operation = document["paths"]["/v1/memory_bootstrap"]["post"]
    schema = operation["requestBody"]["content"]["application/json"]["schema"]
    assert set(schema["properties"]) == {"project_id", "project_prefix", "terms", "token_budget", "agent"}
    assert schema.get("additionalProperties") is False
    assert "400" in operation["responses"]


def test_cli_prints_the_same_pack(neo4j_target, db):
    populate(Store(db))
    env = {"NEO4J_URI": neo4j_target.uri, "NEO4J_USER": neo4j_target.user, "NEO4J_PASSWORD": neo4j_target.password,
           "PATH": "/usr/bin:/bin"}
    out = subprocess.run(
        [sys.executable, "-m", "graphsvc", "bootstrap", "--project-prefix", "nott", "--terms", "tool", "cafe",
         "--token-budget", "500", "--now", NOW.isoformat()],
        capture_output=True, text=True, env=env, timeout=120, check=True,
    ).stdout
    expected = GraphService(db, clock=fixed_clock(NOW)).bootstrap(
        {"project_prefix": "nott", "terms": ["tool", "cafe"], "token_budget": 500})
    assert json.loads(out) == expected


def test_cli_bad_prefix_exits_2_with_the_teaching_message(neo4j_target):
    env = {"NEO4J_URI": neo4j_target.uri, "NEO4J_PASSWORD": neo4j_target.password, "PATH": "/usr/bin:/bin"}
    run = subprocess.run([sys.executable, "-m", "graphsvc", "bootstrap", "--project-prefix", "nott/"],
                         capture_output=True, text=True, env=env, timeout=120)
    assert run.returncode == 2
    assert "matches nothing" in run.stderr and "project_prefix" in run.stderr


@pytest.mark.parametrize("now", ["yesterday", "0001-01-01T00:00:00+01:00"])
def test_cli_bad_now_exits_2_naming_the_option(neo4j_target, now):
    # The second parses, but moving it to UTC leaves year 1: an OverflowError, once a traceback.
    env = {"NEO4J_URI": neo4j_target.uri, "NEO4J_PASSWORD": neo4j_target.password, "PATH": "/usr/bin:/bin"}
    run = subprocess.run([sys.executable, "-m", "graphsvc", "bootstrap", "--now", now],
                         capture_output=True, text=True, env=env, timeout=120)
    assert run.returncode == 2
    assert "--now must be an ISO-8601 instant" in run.stderr and "Traceback" not in run.stderr
