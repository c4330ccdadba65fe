"""The foundation works against a real Neo4j: schema, Bolt round trips, ingest basics."""

from __future__ import annotations

from datetime import datetime, timezone

from graphsvc.models import CapsuleIn
from graphsvc.store.ingest import ingest

NOW = datetime(2026, 12, 1, 12, 0, tzinfo=timezone.utc)


def test_schema_constraints_and_indexes_exist(db):
    names = {r["name"] for r in db._driver.execute_query("SHOW CONSTRAINTS YIELD name").records}
    assert {"capsule_id_unique", "id_counter_name_unique"} <= names
    indexes = {r["name"] for r in db._driver.execute_query("SHOW INDEXES YIELD name").records}
    assert {"capsule_project_id", "capsule_kind_project", "capsule_seq"} <= indexes


def test_schema_is_idempotent(db):
    db.apply_schema()
    db.apply_schema()
    names = [r["name"] for r in db._driver.execute_query("SHOW CONSTRAINTS YIELD name").records]
    assert names.count("capsule_id_unique") == 1


def test_schema_replaces_the_indexes_an_older_store_has(db):
    # Before the fenced packs read (project_id, updated_at) and the full-text indexes held project_id;
    # then before the ranked sections read the maintained `counted` instead of one index per kind.
    for statement in ("CREATE INDEX decision_project IF NOT EXISTS FOR (c:Decision) ON (c.project_id)",
                      "CREATE FULLTEXT INDEX decision_tokens IF NOT EXISTS FOR (c:Decision) ON EACH [c.tokens] "
                      "OPTIONS {indexConfig: {`fulltext.analyzer`: 'whitespace'}}",
                      "CREATE INDEX decision_project_updated_at IF NOT EXISTS FOR (c:Decision) ON (c.project_id, c.updated_at)",
                      "CREATE INDEX capsule_ready_updated_at IF NOT EXISTS FOR (c:Capsule) ON (c.ready, c.updated_at)"):
        db._driver.execute_query(statement)
    db.apply_schema()
    indexes = {r["name"]: r["state"] for r in db._driver.execute_query("SHOW INDEXES YIELD name, state").records}
    replaced = {"decision_project", "decision_tokens", "decision_project_updated_at", "capsule_ready_updated_at"}
    assert not replaced & set(indexes)
    assert indexes["capsule_counted_project_updated_at"] == indexes["capsule_counted_updated_at"] == "ONLINE"
    assert indexes["capsule_terms"] == "ONLINE"


def test_nodes_written_over_bolt_are_read_back(db):
    ids = ingest(
        db,
        [
            CapsuleIn(project_id="nott", kind="constraint", content="Never push to main\nwithout review"),
            CapsuleIn(project_id="nott/x", kind="task", content="Write the parser"),
        ],
        NOW,
    )
    assert ids == ["cap-1", "cap-2"]
    records = db._driver.execute_query(
        "MATCH (c:Capsule) RETURN c.id AS id, c.headline AS headline, c.status AS status, c.updated_at AS at "
        "ORDER BY c.seq"
    ).records
    assert [(r["id"], r["headline"], r["status"]) for r in records] == [
        ("cap-1", "Never push to main", None),
        ("cap-2", "Write the parser", "open"),
    ]
    assert records[0]["at"].to_native() == NOW


def test_each_test_starts_from_an_empty_database(db):
    count = db._driver.execute_query("MATCH (n) RETURN count(n) AS n").records[0]["n"]
    assert count == 0


def test_an_app_that_owns_its_service_closes_the_driver_at_shutdown(db, neo4j_target):
    """`graphsvc serve` builds its service per worker: stopping the worker closes its Neo4j pool. A
    service handed in by other code (owns_service=False, as the tests do) stays usable."""
    import httpx
    import pytest

    from graphsvc.service import GraphService
    from graphsvc.store.db import Database
    from graphsvc.surfaces.http.app import create_app

    from .live_server import LiveServer

    own = Database(neo4j_target.uri, neo4j_target.user, neo4j_target.password)
    with LiveServer(create_app(GraphService(own), owns_service=True)) as server:
        assert httpx.get(server.url + "/readyz", timeout=30).status_code == 200
    with pytest.raises(Exception):
        own._driver.verify_connectivity()  # closed
    with LiveServer(create_app(GraphService(db))) as server:
        assert httpx.get(server.url + "/readyz", timeout=30).status_code == 200
    assert db.ping()
