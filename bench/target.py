"""Which Neo4j a benchmark may wipe: `NEO4J_URI` when set, else the local `bench` instance.

Benchmarks empty their database, so they never default to the `dev` instance (your demo data)
or the `test` instance; the local `bench` instance (Bolt 7689, HTTP 7476) is started on demand.
"""

from __future__ import annotations

import os

from graphsvc.store.db import Database
from graphsvc.neo4j_local import LocalNeo4j


def bench_database(timeout: float = 60.0) -> Database:
    """The bench's Neo4j; without NEO4J_URI the local `bench` instance, started, and named in this
    process's environment so that the `graphsvc serve` a bench starts uses it too."""
    if not os.environ.get("NEO4J_URI"):
        local = LocalNeo4j.named("bench")
        local.start()
        os.environ.update(NEO4J_URI=local.bolt_uri, NEO4J_USER="neo4j", NEO4J_PASSWORD=local.password)
    return Database(
        os.environ["NEO4J_URI"],
        os.environ.get("NEO4J_USER", "neo4j"),
        os.environ.get("NEO4J_PASSWORD", ""),
        os.environ.get("NEO4J_DATABASE", "neo4j"),
        timeout=timeout, query_timeout=timeout,
    )
