"""Neo4j goes away under a running service: it answers 503 + Retry-After at once, never hangs,
and serves again by itself when Neo4j is back (SPEC §6).

This test owns a Neo4j of its own because it stops, freezes and kills it; the shared test database
is never touched. It follows the session's discovery (tests/conftest.py): without NEO4J_URI and with a
Docker engine answering, a testcontainers Neo4j container (stopped and started with the Docker API,
frozen with `docker pause`, killed with SIGKILL); otherwise the local instance `outage-<pid>`, on free
ports, removed at the end. The service runs as a real `graphsvc serve` process, configured only
through its documented environment variables.
"""

from __future__ import annotations

import dataclasses
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Iterator

import httpx
import pytest

from graphsvc.neo4j_local import LocalNeo4j
from tests.neo4j_containers import ContainerUnavailable, docker_answers, neo4j_container, wait_for_bolt

TIMEOUT = 2.0  # GRAPHSVC_NEO4J_TIMEOUT: how long a request may wait for Neo4j
QUERY_TIMEOUT = 5.0  # GRAPHSVC_QUERY_TIMEOUT: how long one transaction may run (the default)
DEADLINE = 2.0  # SPEC: an outage is a 503 within this many seconds, never a hang
#: No request may wait longer than the service's bound (connection + query timeout) plus what
#: HTTP and a shared, loaded 2-core machine add on top.
BOUND = TIMEOUT + QUERY_TIMEOUT
BOUND_SLACK = 1.5
#: /healthz answers within this (p99) while Neo4j is frozen.
HEALTHZ_LIMIT = 0.1


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class LocalOutageNeo4j:
    """The local server, driven through its launcher and signals."""

    def __init__(self) -> None:
        # A home of its own per run (the pid in the name): two suites running at once on one machine
        # must not share a Neo4j home, or one starts (or stops) the other's server.
        self.local = dataclasses.replace(
            LocalNeo4j.named("outage"), instance=f"outage-{os.getpid()}",
            bolt_port=free_port(), http_port=free_port(), heap="512m", pagecache="64m",
            keeps_class_archive=False,  # removed with its home after the run
        )
        self.bolt_uri, self.password = self.local.bolt_uri, self.local.password

    def start(self) -> None:  # returns once Bolt answers a query
        self.local.start()

    def stop(self) -> None:
        self.local.stop()

    def _pid(self) -> int:
        return int((self.local.home / "run" / "neo4j.pid").read_text().strip())

    def freeze(self) -> None:
        os.kill(self._pid(), signal.SIGSTOP)

    def thaw(self) -> None:
        os.kill(self._pid(), signal.SIGCONT)

    def kill(self) -> None:
        """SIGKILL, returning once the JVM is gone: a start before the kernel has torn it down (or
        while it is an unreaped zombie) finds its pid file naming a live process, takes the server
        for running and waits for a Bolt that never comes."""
        pid_file = self.local.home / "run" / "neo4j.pid"
        pid = int(pid_file.read_text().strip())
        os.kill(pid, signal.SIGKILL)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
            except (FileNotFoundError, ProcessLookupError, IndexError):
                break
            if state in ("Z", "X"):  # dead: its locks and ports are released, only the pid remains
                break
            time.sleep(0.05)
        pid_file.unlink(missing_ok=True)  # as after a crash: the next start finds no server running

    def remove(self) -> None:
        pid_file = self.local.home / "run" / "neo4j.pid"
        if pid_file.exists():  # in case a test left it frozen
            try:
                os.kill(int(pid_file.read_text().strip()), signal.SIGCONT)
            except (ProcessLookupError, ValueError):
                pass
        if self.local.is_running():
            self.local.stop()
        shutil.rmtree(self.local.home, ignore_errors=True)


class ContainerOutageNeo4j:
    """A testcontainers Neo4j container, driven through the Docker API (its data survives a stop)."""

    def __init__(self) -> None:
        self.container = None

    def start(self) -> None:  # returns once Bolt answers a query
        if self.container is None:
            self.container = neo4j_container(heap="512m", pagecache="64m")
            self.bolt_uri, self.password = self.container.bolt_uri, self.container.password
        else:
            self.container.get_wrapped_container().start()
        wait_for_bolt(self.bolt_uri, self.password, timeout=180)

    def stop(self) -> None:
        self.container.get_wrapped_container().stop(timeout=30)

    def freeze(self) -> None:
        self.container.get_wrapped_container().pause()

    def thaw(self) -> None:
        self.container.get_wrapped_container().unpause()

    def kill(self) -> None:
        self.container.get_wrapped_container().kill(signal="SIGKILL")

    def remove(self) -> None:
        if self.container is not None:
            wrapped = self.container.get_wrapped_container()
            wrapped.reload()
            if wrapped.status == "paused":
                wrapped.unpause()
            self.container.stop()


@pytest.fixture(scope="module")
def neo4j():
    if not os.environ.get("NEO4J_URI") and docker_answers():
        server = ContainerOutageNeo4j()
    else:
        server = LocalOutageNeo4j()
    try:
        try:
            server.start()
        except ContainerUnavailable as exc:
            pytest.fail(f"the outage test's Neo4j container: {exc}")
        yield server
    finally:
        server.remove()


@pytest.fixture(scope="module")
def service(neo4j) -> Iterator[httpx.Client]:
    port = free_port()
    env = dict(os.environ)
    env.update(
        NEO4J_URI=neo4j.bolt_uri, NEO4J_USER="neo4j", NEO4J_PASSWORD=neo4j.password,
        GRAPHSVC_PORT=str(port), GRAPHSVC_NEO4J_TIMEOUT=str(TIMEOUT), GRAPHSVC_QUERY_TIMEOUT=str(QUERY_TIMEOUT),
        GRAPHSVC_LOG_LEVEL="warning",
    )
    env.pop("GRAPHSVC_API_TOKEN", None)
    log = Path(os.environ.get("TMPDIR", "/tmp")) / f"graphsvc-outage-{port}.log"
    with open(log, "wb") as out:
        proc = subprocess.Popen([sys.executable, "-m", "graphsvc", "serve"], env=env, stdout=out, stderr=out)
    client = httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=15.0)
    try:
        deadline = time.monotonic() + 180  # a fresh Neo4j plans the pack's shapes first (slow on a busy box)
        while True:
            try:
                if client.get("/readyz").status_code == 200:
                    break
            except httpx.TransportError:
                pass
            assert proc.poll() is None, log.read_text()
            assert time.monotonic() < deadline, "the service did not become ready:\n" + log.read_text()
            time.sleep(0.2)
        client.process = proc  # type: ignore[attr-defined]  # recovery must not need a new process
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


def assert_unavailable_fast(client: httpx.Client, deadline: float = DEADLINE) -> list[float]:
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
        assert took < deadline, f"{method} {path} took {took:.2f}s during the outage"
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


def until_ok(client: httpx.Client, method: str, path: str, body=None, limit: float = 240.0) -> httpx.Response:
    """Retry a call on 503 (as Retry-After asks) until it succeeds; every attempt stays in the bound.

    A freshly (re)started Neo4j on a busy machine can need a minute to plan the pack statement;
    meanwhile the service answers 503 quickly, which is the behaviour under test."""
    started = time.monotonic()
    while True:
        began = time.monotonic()
        response = client.request(method, path, json=body)
        assert time.monotonic() - began <= BOUND + BOUND_SLACK, f"{method} {path} waited past the bound"
        if response.status_code != 503 or time.monotonic() - started > limit:
            return response
        assert int(response.headers["Retry-After"]) > 0
        time.sleep(0.5)


def test_stopped_neo4j_gives_fast_503_then_the_service_recovers_by_itself(neo4j, service, capsys):
    created = until_ok(service, "POST", "/v1/capsules", {"project_id": "outage", "kind": "constraint",
                                                         "content": "Survives a restart"})
    assert created.status_code == 201, created.text
    [capsule_id] = created.json()["ids"]

    neo4j.stop()
    elapsed = assert_unavailable_fast(service)
    assert_unavailable_fast(service)  # and again: pooled connections are not stuck either

    neo4j.start()  # returns once Bolt answers a query
    recovery = wait_until_ready(service)
    began = time.monotonic()
    response = until_ok(service, "POST", "/v1/memory_bootstrap", {"project_id": "outage"})
    first_pack = time.monotonic() - began
    with capsys.disabled():
        print(f"\n[outage] stopped Neo4j: 503 in {max(elapsed):.3f}s (worst of {len(elapsed)} routes); "
              f"/readyz 200 again {recovery:.3f}s after Neo4j answered Bolt; first pack then took "
              f"{first_pack:.3f}s to succeed (fast 503s while the cold query plans compiled)")

    assert response.status_code == 200, response.text
    assert capsule_id in response.json()["handles"]
    assert service.get("/readyz").status_code == 200
    listed = until_ok(service, "POST", "/v1/capsules", {"project_id": "outage", "kind": "fact", "content": "after"})
    assert listed.status_code == 201, listed.text


def test_frozen_neo4j_gives_fast_503_instead_of_a_hang(neo4j, service, capsys):
    """A Neo4j that accepts connections but never answers (SIGSTOP) is the case that hangs naive
    clients: the TCP connect succeeds, then nothing. The service must still answer within the deadline."""
    before = service.get("/readyz")
    assert before.status_code == 200, before.text
    neo4j.freeze()  # SIGSTOP (local) or the cgroup freezer (docker pause)
    health: list[tuple[int, float]] = []
    stop_probing = threading.Event()

    def probe() -> None:  # /healthz every 50 ms on a connection of its own, while the calls hang
        with httpx.Client(base_url=service.base_url, timeout=15.0) as own:
            while not stop_probing.is_set():
                began = time.monotonic()
                status = own.get("/healthz").status_code
                health.append((status, time.monotonic() - began))
                stop_probing.wait(0.05)

    prober = threading.Thread(target=probe, daemon=True)
    prober.start()
    try:
        # A frozen server enforces no transaction timeout: the service's own wall-clock bound
        # (connection + query timeout) answers for it.
        elapsed = assert_unavailable_fast(service, deadline=BOUND + BOUND_SLACK)
    finally:
        stop_probing.set()
        prober.join(timeout=20)
        neo4j.thaw()
    waits = sorted(took for _, took in health)
    assert health and all(status == 200 for status, _ in health), health
    # The process answers while every Neo4j call hangs: p99 within 100 ms (issue 30's target).
    assert waits[int(0.99 * (len(waits) - 1))] < HEALTHZ_LIMIT, waits[-5:]
    recovery = wait_until_ready(service)
    began = time.monotonic()
    response = until_ok(service, "POST", "/v1/memory_bootstrap", {"project_id": "outage"})
    took = time.monotonic() - began
    assert response.status_code == 200, response.text
    with capsys.disabled():
        print(f"\n[outage] frozen Neo4j: 503 in {max(elapsed):.3f}s (worst of {len(elapsed)} routes); "
              f"/healthz p99 {1000 * waits[int(0.99 * (len(waits) - 1))]:.1f} ms of {len(waits)} probes; "
              f"/readyz 200 again {recovery:.3f}s after it resumed; next pack {took:.3f}s")


# ---------------------------------------------------------------- kill -9 under load

LOAD_CLIENTS = 4
KILL_AT = 3.0  # seconds into the load
RESTART_AFTER = 3.0  # seconds Neo4j stays dead
CALM_AFTER_RECOVERY = 4.0  # seconds of load once packs succeed again
LOAD_LIMIT = 360.0  # the whole run, whatever happens (a restarted Neo4j plans slowly on a busy box)


@dataclasses.dataclass
class Outcome:
    kind: str
    status: int
    seconds: float
    retry_after: str | None
    ids: list[str]


def load_worker(base_url: str, worker: int, stop: threading.Event, outcomes: list[Outcome]) -> None:
    """Closed loop: 7 packs for every 3 single ingests, each timed; a generous client timeout so
    that a server overrunning its bound is measured rather than cut off."""
    with httpx.Client(base_url=base_url, timeout=30.0) as client:
        n = 0
        while not stop.is_set():
            n += 1
            ingest = n % 10 in (3, 6, 9)
            started = time.monotonic()
            try:
                if ingest:
                    response = client.post("/v1/capsules", json={
                        "project_id": f"fault/w{worker}", "kind": "fact", "content": f"fact {worker}-{n}"})
                else:
                    response = client.post("/v1/memory_bootstrap", json={"project_prefix": "fault", "terms": ["fact"]})
                status, retry_after = response.status_code, response.headers.get("Retry-After")
                ids = response.json()["ids"] if ingest and status == 201 else []
            except httpx.TransportError:
                status, retry_after, ids = 0, None, []
            outcomes.append(Outcome("ingest" if ingest else "pack", status, time.monotonic() - started,
                                    retry_after, ids))
            if status == 503:
                time.sleep(0.05)  # a polite client; it would honour Retry-After, the test wants samples


def test_kill_9_under_load_loses_no_acknowledged_write_and_no_wait_passes_the_bound(neo4j, service, capsys):
    assert service.get("/readyz").status_code == 200
    stop = threading.Event()
    outcomes: list[Outcome] = []
    threads = [threading.Thread(target=load_worker, args=(str(service.base_url), w, stop, outcomes), daemon=True)
               for w in range(LOAD_CLIENTS)]
    began = time.monotonic()
    for thread in threads:
        thread.start()
    try:
        time.sleep(KILL_AT)
        killed_at = time.monotonic()
        neo4j.kill()
        time.sleep(RESTART_AFTER)
        neo4j.start()  # returns once Bolt answers a query
        answered_at = time.monotonic()
        recovered_at = None
        while time.monotonic() - began < LOAD_LIMIT:
            recent = [o for o in outcomes[-20:] if o.kind == "pack"]
            if recovered_at is None and recent and recent[-1].status == 200:
                recovered_at = time.monotonic()
            if recovered_at is not None and time.monotonic() - recovered_at > CALM_AFTER_RECOVERY:
                break
            time.sleep(0.1)
    finally:
        stop.set()
        for thread in threads:
            thread.join(timeout=40)
    assert recovered_at is not None, "packs never succeeded again after Neo4j came back"

    worst = max(o.seconds for o in outcomes)
    failures = [o for o in outcomes if o.status not in (200, 201)]
    acknowledged = [capsule_id for o in outcomes for capsule_id in o.ids]
    after = [o for o in outcomes if o.status in (200, 201)]
    stored_ids = []
    for start in range(0, len(acknowledged), 1000):  # the get route's batch limit
        stored = service.post("/v1/capsules/get", json={"ids": acknowledged[start:start + 1000]})
        assert stored.status_code == 200, stored.text  # an unknown (lost) id would be a 404 naming it
        stored_ids += [c["id"] for c in stored.json()["capsules"]]
    with capsys.disabled():
        print(f"\n[fault] kill -9 under {LOAD_CLIENTS} clients: {len(outcomes)} requests, {len(failures)} failed "
              f"(all 503 + Retry-After: {all(o.status == 503 and o.retry_after for o in failures)}), "
              f"worst wait {worst:.2f}s (bound {BOUND:.1f}s + {BOUND_SLACK}s slack); Neo4j answered Bolt "
              f"{answered_at - killed_at:.1f}s after the kill, packs succeeded again "
              f"{recovered_at - answered_at:.2f}s after that; {len(acknowledged)} acknowledged writes, "
              f"all stored: {stored_ids == acknowledged}")
    assert all(o.status == 503 and o.retry_after and int(o.retry_after) > 0 for o in failures), \
        sorted({(o.kind, o.status) for o in failures})
    assert worst <= BOUND + BOUND_SLACK, sorted(o.seconds for o in outcomes)[-5:]
    assert len(acknowledged) == len(set(acknowledged)) and acknowledged
    assert stored_ids == acknowledged  # every acknowledged id is in the store: none lost
    assert after and after[-1].status in (200, 201)
    # Packs run again as soon as the re-warm has planned the reads; /readyz waits for the write plans
    # too, which the re-warm makes next (seconds on a JVM just started).
    ready_by = time.monotonic() + 30
    while service.get("/readyz").status_code != 200:
        assert time.monotonic() < ready_by, "/readyz never answered 200 again after the re-warm"
        time.sleep(0.2)
    assert service.process.poll() is None  # type: ignore[attr-defined]  # the same process served throughout
