"""Neo4j goes away under a running service: it answers 503 + Retry-After at once, never hangs,
and serves again by itself when Neo4j is back (SPEC §6).

This test owns a Neo4j of its own (local instance `outage-<pid>`, on free ports, removed at the
end) because it stops and starts it; the shared test database is never touched. The service runs as a real `graphsvc serve`
process, configured only through its documented environment variables.
"""

from __future__ import annotations

import dataclasses
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Iterator

import httpx
import pytest

from graphsvc.neo4j_local import LocalNeo4j

TIMEOUT = 2.0  # GRAPHSVC_NEO4J_TIMEOUT: how long a request may wait for Neo4j
DEADLINE = 2.0  # SPEC: an outage is a 503 within this many seconds, never a hang


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture(scope="module")
def neo4j() -> Iterator[LocalNeo4j]:
    # A home of its own per run (the pid in the name): two suites running at once on one machine
    # must not share a Neo4j home, or one starts (or stops) the other's server.
    local = dataclasses.replace(
        LocalNeo4j.named("outage"), instance=f"outage-{os.getpid()}",
        bolt_port=free_port(), http_port=free_port(), heap="512m", pagecache="64m",
    )
    try:
        local.start()
        yield local
    finally:
        pid_file = local.home / "run" / "neo4j.pid"
        if pid_file.exists():  # in case a test left it frozen
            try:
                os.kill(int(pid_file.read_text().strip()), signal.SIGCONT)
            except (ProcessLookupError, ValueError):
                pass
        if local.is_running():
            local.stop()
        shutil.rmtree(local.home, ignore_errors=True)


def neo4j_pid(local: LocalNeo4j) -> int:
    return int((local.home / "run" / "neo4j.pid").read_text().strip())


@pytest.fixture(scope="module")
def service(neo4j: LocalNeo4j) -> Iterator[httpx.Client]:
    port = free_port()
    env = dict(os.environ)
    env.update(
        NEO4J_URI=neo4j.bolt_uri, NEO4J_USER="neo4j", NEO4J_PASSWORD=neo4j.password,
        GRAPHSVC_PORT=str(port), GRAPHSVC_NEO4J_TIMEOUT=str(TIMEOUT), GRAPHSVC_LOG_LEVEL="warning",
    )
    env.pop("GRAPHSVC_API_TOKEN", None)
    log = Path(os.environ.get("TMPDIR", "/tmp")) / f"graphsvc-outage-{port}.log"
    with open(log, "wb") as out:
        proc = subprocess.Popen([sys.executable, "-m", "graphsvc", "serve"], env=env, stdout=out, stderr=out)
    client = httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=15.0)
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                if client.get("/readyz").status_code == 200:
                    break
            except httpx.TransportError:
                pass
            assert proc.poll() is None, log.read_text()
            assert time.monotonic() < deadline, "the service did not become ready:\n" + log.read_text()
            time.sleep(0.2)
        yield client
    finally:
        client.close()
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


CALLS = [
    ("GET", "/readyz", None),
    ("POST", "/v1/memory_bootstrap", {"project_id": "outage"}),
    ("POST", "/v1/capsules", {"project_id": "outage", "kind": "fact", "content": "written during the outage"}),
]


def assert_unavailable_fast(client: httpx.Client) -> list[float]:
    elapsed = []
    for method, path, body in CALLS:
        started = time.monotonic()
        response = client.request(method, path, json=body)
        took = time.monotonic() - started
        elapsed.append(took)
        assert response.status_code == 503, (path, response.status_code, response.text)
        assert int(response.headers["Retry-After"]) > 0
        assert response.json()["error"]["code"] == "neo4j_unavailable"
        assert "password" not in response.text.lower()
        assert took < DEADLINE, f"{method} {path} took {took:.2f}s during the outage"
    assert client.get("/healthz").status_code == 200  # the process itself is fine
    return elapsed


def wait_until_ready(client: httpx.Client, limit: float = 60.0) -> float:
    """Seconds until /readyz says 200 again (polling every 100 ms; each poll is bounded by the 503)."""
    started = time.monotonic()
    while time.monotonic() - started < limit:
        if client.get("/readyz").status_code == 200:
            return time.monotonic() - started
        time.sleep(0.1)
    pytest.fail(f"the service did not recover within {limit:.0f}s of Neo4j answering again")


def timed_bootstrap(client: httpx.Client) -> tuple[httpx.Response, float]:
    started = time.monotonic()
    response = client.post("/v1/memory_bootstrap", json={"project_id": "outage"})
    return response, time.monotonic() - started


def test_stopped_neo4j_gives_fast_503_then_the_service_recovers_by_itself(neo4j, service, capsys):
    created = service.post("/v1/capsules", json={"project_id": "outage", "kind": "constraint",
                                                 "content": "Survives a restart"})
    assert created.status_code == 201, created.text
    [capsule_id] = created.json()["ids"]

    neo4j.stop()
    elapsed = assert_unavailable_fast(service)
    assert_unavailable_fast(service)  # and again: pooled connections are not stuck either

    neo4j.start()  # returns once Bolt answers a query
    recovery = wait_until_ready(service)
    response, first_pack = timed_bootstrap(service)
    with capsys.disabled():
        print(f"\n[outage] stopped Neo4j: 503 in {max(elapsed):.3f}s (worst of {len(elapsed)} routes); "
              f"/readyz 200 again {recovery:.3f}s after Neo4j answered Bolt; first pack then took "
              f"{first_pack:.3f}s (cold query plans after the restart)")

    assert response.status_code == 200, response.text
    assert capsule_id in response.json()["handles"]
    assert service.get("/readyz").status_code == 200
    listed = service.post("/v1/capsules", json={"project_id": "outage", "kind": "fact", "content": "after"})
    assert listed.status_code == 201


def test_frozen_neo4j_gives_fast_503_instead_of_a_hang(neo4j, service, capsys):
    """A Neo4j that accepts connections but never answers (SIGSTOP) is the case that hangs naive
    clients: the TCP connect succeeds, then nothing. The service must still answer within the deadline."""
    before = service.get("/readyz")
    assert before.status_code == 200, before.text
    pid = neo4j_pid(neo4j)
    os.kill(pid, signal.SIGSTOP)
    try:
        elapsed = assert_unavailable_fast(service)
    finally:
        os.kill(pid, signal.SIGCONT)
    recovery = wait_until_ready(service)
    response, took = timed_bootstrap(service)
    assert response.status_code == 200, response.text
    with capsys.disabled():
        print(f"\n[outage] frozen Neo4j: 503 in {max(elapsed):.3f}s (worst of {len(elapsed)} routes); "
              f"/readyz 200 again {recovery:.3f}s after it resumed; next pack {took:.3f}s")
