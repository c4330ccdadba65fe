"""Where the tests find a real Neo4j, in this order (DEVELOPERS.md):

1. `NEO4J_URI` (+ `NEO4J_USER` / `NEO4J_PASSWORD`) when set;
2. else a testcontainers `Neo4jContainer("neo4j:5.26-community")` when a Docker engine answers;
3. else the project's own local Neo4j, instance `test` (Bolt 7688, HTTP 7475), started here
   when it is not already running and stopped again at the end of the session.

Nothing here fakes Neo4j. Each test that asks for `db` starts from an empty database.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Iterator

import pytest


@dataclass(frozen=True)
class Neo4jTarget:
    uri: str
    user: str
    password: str
    source: str
    http_url: str | None = None


def _docker_answers() -> bool:
    try:
        import docker  # shipped with testcontainers

        client = docker.from_env(timeout=3)
        client.ping()
        return True
    except Exception:
        return False


@pytest.fixture(scope="session")
def neo4j_target() -> Iterator[Neo4jTarget]:
    if os.environ.get("NEO4J_URI"):
        yield Neo4jTarget(
            uri=os.environ["NEO4J_URI"],
            user=os.environ.get("NEO4J_USER", "neo4j"),
            password=os.environ.get("NEO4J_PASSWORD", ""),
            source="NEO4J_URI",
            http_url=os.environ.get("NEO4J_HTTP_URL"),
        )
        return
    if _docker_answers():
        from testcontainers.neo4j import Neo4jContainer

        with Neo4jContainer("neo4j:5.26-community") as container:
            yield Neo4jTarget(
                uri=container.get_connection_url(),
                user="neo4j",
                password=container.password,
                source="testcontainers",
                http_url=f"http://{container.get_container_host_ip()}:{container.get_exposed_port(7474)}",
            )
        return
    from graphsvc.neo4j_local import LocalNeo4j

    local = LocalNeo4j.named("test")
    started_here = local.start()
    try:
        yield Neo4jTarget(
            uri=local.bolt_uri,
            user="neo4j",
            password=local.password,
            source="local",
            http_url=f"http://127.0.0.1:{local.http_port}",
        )
    finally:
        if started_here:
            local.stop()


@pytest.fixture(scope="session")
def database(neo4j_target: Neo4jTarget):
    from graphsvc.store.db import Database

    db = Database(neo4j_target.uri, neo4j_target.user, neo4j_target.password, timeout=30.0)
    db.apply_schema()
    yield db
    db.close()


def wipe(database) -> None:
    database.wipe_all()


@pytest.fixture
def db(database):
    """A real, empty Neo4j database (schema kept) for one test."""
    wipe(database)
    return database
