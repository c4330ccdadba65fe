"""Where the tests find a real Neo4j, in this order (DEVELOPERS.md):

1. `NEO4J_URI` (+ `NEO4J_USER` / `NEO4J_PASSWORD`) when set;
2. else a testcontainers `Neo4jContainer` when a Docker engine answers (at `DOCKER_HOST`, or the
   default socket): the image is `GRAPHSVC_NEO4J_IMAGE` or the official `neo4j:5.26-community`
   (tests/neo4j_containers.py; host networking on an engine without a bridge). An engine that
   answers without the image is a failure, not a fallback; so is no engine at all when
   `GRAPHSVC_REQUIRE_DOCKER=1` (`make test`'s container step);
3. else the project's own local Neo4j, instance `test` (Bolt 7688, HTTP 7475), started here
   when it is not already running and stopped again at the end of the session.

Nothing here fakes Neo4j. Each test that asks for `db` starts from an empty database.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Iterator

import pytest
from hypothesis import settings

# Tests assert behaviour, never time: Hypothesis's default 200 ms per-example deadline fails a
# correct property on a busy 2-core machine, so no example has a deadline.
settings.register_profile("graphsvc", deadline=None)
settings.load_profile("graphsvc")


@dataclass(frozen=True)
class Neo4jTarget:
    uri: str
    user: str
    password: str
    source: str
    http_url: str | None = None


def _docker_answers() -> bool:
    from tests.neo4j_containers import docker_answers, docker_required

    if docker_answers():
        return True
    if docker_required():
        pytest.exit(f"GRAPHSVC_REQUIRE_DOCKER=1 but no Docker engine answers at "
                    f"{os.environ.get('DOCKER_HOST', 'the default socket')} (start it: make docker-up)", returncode=3)
    return False


#: Which Neo4j this session used (printed in the terminal summary, so a CI log shows it).
_USED: list[str] = []


def pytest_terminal_summary(terminalreporter) -> None:
    if _USED:
        terminalreporter.write_line(f"Neo4j for this session: {_USED[0]}")
    if _UNPLANNED:
        terminalreporter.write_line("Statements ran in a transaction state the warm-up does not plan "
                                    "(graphsvc/store/warmup.py STATEMENTS): " + ", ".join(
                                        f"{name} ({'after a change' if changed else 'clean'})"
                                        for name, changed in sorted(_UNPLANNED)))


# Every write statement run in this process, with whether its transaction had already changed
# something: the warm-up plans each statement only in the states declared for it, so a write that
# runs one in another state would plan it cold under load. The session fails when that happens.
_RAN: set[tuple[str, bool]] = set()
_UNPLANNED: set[tuple[str, bool]] = set()


def pytest_sessionstart(session) -> None:
    from graphsvc.store import db

    db.plan_observer = lambda name, changed: _RAN.add((name, changed))


def pytest_sessionfinish(session, exitstatus) -> None:
    from graphsvc.store.warmup import unplanned

    record = os.environ.get("GRAPHSVC_PLAN_RECORD")
    if record:
        with open(record, "a", encoding="utf-8") as out:
            out.writelines(f"{name} {int(changed)}\n" for name, changed in sorted(_RAN))
    _UNPLANNED.update(unplanned(_RAN))
    if _UNPLANNED and session.exitstatus == 0:
        session.exitstatus = 1


@pytest.fixture(scope="session")
def neo4j_target() -> Iterator[Neo4jTarget]:
    if os.environ.get("NEO4J_URI"):
        _USED.append(f"NEO4J_URI ({os.environ['NEO4J_URI']})")
        yield Neo4jTarget(
            uri=os.environ["NEO4J_URI"],
            user=os.environ.get("NEO4J_USER", "neo4j"),
            password=os.environ.get("NEO4J_PASSWORD", ""),
            source="NEO4J_URI",
            http_url=os.environ.get("NEO4J_HTTP_URL"),
        )
        return
    if _docker_answers():
        from tests.neo4j_containers import ContainerUnavailable, neo4j_container

        try:
            container = neo4j_container()
        except ContainerUnavailable as exc:
            pytest.exit(f"testcontainers Neo4j: {exc}", returncode=3)
        _USED.append(f"testcontainers, image {container.image} ({container.bolt_uri}, "
                     f"{'host network' if container.host_network else 'published ports'})")
        try:
            yield Neo4jTarget(
                uri=container.bolt_uri,
                user="neo4j",
                password=container.password,
                source="testcontainers",
                http_url=container.http_url,
            )
        finally:
            container.stop()
        return
    from graphsvc.neo4j_local import LocalNeo4j

    local = LocalNeo4j.named("test")
    started_here = local.start()
    _USED.append(f"local instance '{local.instance}' ({local.bolt_uri})")
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
