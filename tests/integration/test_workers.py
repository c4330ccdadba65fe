"""More than one process, the engine's way (issue 11): `graphsvc serve --workers 2` never hands out
an id twice, a `neo4j://` routing URI works against the single server (it answers routing), and
the bookmark a write returns lets a read on ANOTHER service process see that write.

Real `graphsvc serve` processes against the test Neo4j, configured only through their
documented environment; nothing is mocked.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

import httpx
import pytest

from tests.integration.live_server import free_port

BOOKMARK = "Graphsvc-Bookmark"


def children(pid: int) -> list[int]:
    """The worker processes uvicorn's supervisor spawned (not multiprocessing's resource tracker)."""
    path = Path(f"/proc/{pid}/task/{pid}/children")
    found = [int(p) for p in path.read_text().split()] if path.exists() else []
    return [child for child in found if b"spawn_main" in Path(f"/proc/{child}/cmdline").read_bytes()
            and b"resource_tracker" not in Path(f"/proc/{child}/cmdline").read_bytes()]


@contextmanager
def serve(neo4j_target, *, uri: str | None = None, workers: int = 1) -> Iterator[tuple[httpx.Client, subprocess.Popen]]:
    port = free_port()
    env = dict(os.environ)
    env.update(NEO4J_URI=uri or neo4j_target.uri, NEO4J_USER=neo4j_target.user, NEO4J_PASSWORD=neo4j_target.password,
               GRAPHSVC_PORT=str(port), GRAPHSVC_LOG_LEVEL="warning", GRAPHSVC_WORKERS=str(workers))
    env.pop("GRAPHSVC_API_TOKEN", None)
    env.pop("PROMETHEUS_MULTIPROC_DIR", None)  # as an operator who never heard of it runs the service
    log = Path(os.environ.get("TMPDIR", "/tmp")) / f"graphsvc-workers-{port}.log"
    with open(log, "wb") as out:
        proc = subprocess.Popen([sys.executable, "-m", "graphsvc", "serve"], env=env, stdout=out, stderr=out)
    client = httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=30.0)
    try:
        deadline = time.monotonic() + 90
        in_a_row = 0  # /readyz is each worker's own: ready means 20 fresh connections in a row, any worker
        while in_a_row < 20:
            try:
                ready = httpx.get(f"http://127.0.0.1:{port}/readyz", timeout=30).status_code == 200
            except httpx.TransportError:
                ready = False
            in_a_row = in_a_row + 1 if ready and len(children(proc.pid)) >= (workers if workers > 1 else 0) else 0
            assert proc.poll() is None, log.read_text()
            assert time.monotonic() < deadline, "the service did not become ready:\n" + log.read_text()
            if not in_a_row:
                time.sleep(0.2)
        yield client, proc
    finally:
        client.close()
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


@pytest.fixture(scope="module")
def two_workers(neo4j_target):
    with serve(neo4j_target, workers=2) as (client, proc):
        yield client, proc


@pytest.fixture(scope="module")
def routed(neo4j_target):
    """A second service process, reaching the same Neo4j through a routing (`neo4j://`) URI."""
    if not neo4j_target.uri.startswith("bolt://"):
        pytest.skip("needs a bolt:// test URI to derive the neo4j:// one")
    with serve(neo4j_target, uri="neo4j://" + neo4j_target.uri[len("bolt://"):]) as (client, proc):
        yield client


def test_two_workers_never_hand_out_an_id_twice(db, two_workers):
    client, proc = two_workers
    assert len(children(proc.pid)) == 2, "uvicorn's supervisor runs two worker processes"
    threads, per_thread, batch = 8, 15, 3
    results: list[list[str]] = []
    errors: list[str] = []

    def ingest(worker: int) -> None:
        # A fresh connection per request, so the kernel spreads them over both workers. A 503 (a
        # busy shared machine) is retried, as the Retry-After header asks.
        for n in range(per_thread):
            body = {"items": [{"project_id": f"workers/t{worker}", "kind": "fact", "content": f"fact {worker}-{n}-{i}"}
                              for i in range(batch)]}
            for _attempt in range(10):
                response = httpx.post(str(client.base_url).rstrip("/") + "/v1/capsules", timeout=30.0, json=body)
                if response.status_code != 503:
                    break
                time.sleep(0.2)
            if response.status_code == 201:
                results.append(response.json()["ids"])
            else:
                errors.append(f"{response.status_code} {response.text}")

    pool = [threading.Thread(target=ingest, args=(w,)) for w in range(threads)]
    for thread in pool:
        thread.start()
    for thread in pool:
        thread.join(timeout=180)
    assert not errors, errors[:3]
    ids = [capsule_id for batch_ids in results for capsule_id in batch_ids]
    assert len(ids) == threads * per_thread * batch
    assert len(set(ids)) == len(ids)  # no id handed out twice
    for batch_ids in results:  # a batch's ids are one block of the counter
        numbers = [int(capsule_id.removeprefix("cap-")) for capsule_id in batch_ids]
        assert numbers == list(range(numbers[0], numbers[0] + batch))
    # The store holds exactly the counter's ids 1..n (a retried 503 may have committed too: then
    # its ids are in the store, unacknowledged, but never a duplicate or a gap).
    stored = sorted(r["seq"] for r in db._driver.execute_query("MATCH (c:Capsule) RETURN c.seq AS seq").records)
    assert stored == list(range(1, len(stored) + 1))
    assert {int(capsule_id.removeprefix("cap-")) for capsule_id in ids} <= set(stored)


def worker_metrics_dir(pid: int) -> Path:
    """The PROMETHEUS_MULTIPROC_DIR a worker process was started with."""
    environ = dict(item.split(b"=", 1) for item in Path(f"/proc/{pid}/environ").read_bytes().split(b"\0") if b"=" in item)
    assert b"PROMETHEUS_MULTIPROC_DIR" in environ, "the supervisor hands every worker the shared metrics directory"
    return Path(environ[b"PROMETHEUS_MULTIPROC_DIR"].decode())


def healthz_count(client: httpx.Client) -> float:
    """GET /healthz answers counted in one /metrics scrape, on a fresh connection (any worker may answer)."""
    text = httpx.get(str(client.base_url).rstrip("/") + "/metrics", timeout=30.0).text
    series = 'graphsvc_http_requests_total{method="GET",route="/healthz",status="200"} '
    return sum(float(line[len(series):]) for line in text.splitlines() if line.startswith(series))


def test_several_workers_merge_their_metrics_in_a_directory_of_their_own_removed_at_stop(neo4j_target):
    with serve(neo4j_target, workers=2) as (client, proc):
        workers = children(proc.pid)
        assert len(workers) == 2
        shared = {worker_metrics_dir(pid) for pid in workers}
        assert len(shared) == 1, shared
        [directory] = shared
        assert directory.is_dir() and directory.name.startswith("graphsvc-metrics-")
        before = healthz_count(client)
        for _ in range(40):  # fresh connections: the kernel hands them to either worker
            assert httpx.get(str(client.base_url).rstrip("/") + "/healthz", timeout=30.0).status_code == 200
        # Every scrape, whichever worker answers it, counts all 40: the workers' values are merged.
        assert [healthz_count(client) for _ in range(6)] == [before + 40] * 6
        writers = {int(path.stem.rsplit("_", 1)[1]) for path in directory.glob("counter_*.db")}
        assert set(workers) <= writers, (workers, sorted(directory.iterdir()))
    assert not directory.exists(), "the directory serve made is removed when its workers stop"


def test_two_workers_starting_together_on_a_new_store_both_come_up(db, neo4j_target):
    """Both workers create the schema at once: the loser of each `IF NOT EXISTS` race must not die."""
    for record in db._driver.execute_query("SHOW CONSTRAINTS YIELD name").records:
        db._driver.execute_query(f"DROP CONSTRAINT `{record['name']}`")  # names Neo4j gave, not user text
    for record in db._driver.execute_query("SHOW INDEXES YIELD name, type WHERE type <> 'LOOKUP'").records:
        db._driver.execute_query(f"DROP INDEX `{record['name']}`")
    with serve(neo4j_target, workers=2) as (client, proc):
        assert len(children(proc.pid)) == 2, "both workers started; neither exited on the schema race"
        created = client.post("/v1/capsules", json={"project_id": "fresh", "kind": "constraint", "content": "Up"})
        assert created.status_code == 201, created.text
        assert client.post("/v1/memory_bootstrap", json={"project_id": "fresh"}).json()["constraints"]
    names = {r["name"] for r in db._driver.execute_query("SHOW INDEXES YIELD name").records}
    assert {"capsule_counted_updated_at", "capsule_counted_project_updated_at"} <= names


def test_a_write_returns_a_bookmark_that_another_process_reads_its_write_with(db, two_workers, routed):
    writer, _ = two_workers
    created = writer.post("/v1/capsules", json={"project_id": "ryw", "kind": "constraint", "content": "Seen anywhere"})
    assert created.status_code == 201, created.text
    token = created.headers[BOOKMARK]
    assert token.startswith("v1.")
    [capsule_id] = created.json()["ids"]

    # The other process (through the routing URI) reads with the bookmark: its read waits for the write.
    pack = routed.post("/v1/memory_bootstrap", json={"project_id": "ryw"}, headers={BOOKMARK: token})
    assert pack.status_code == 200, pack.text
    assert capsule_id in pack.json()["handles"]
    assert "bookmark" not in pack.json() and BOOKMARK not in pack.headers  # reads add nothing to the pack
    got = routed.get(f"/v1/capsules/{capsule_id}", headers={BOOKMARK: token})
    assert got.status_code == 200 and got.json()["id"] == capsule_id

    # Chained: a write on the routed process, sent the first bookmark, returns a newer one.
    updated = routed.patch(f"/v1/capsules/{capsule_id}", json={"tier": "archived"}, headers={BOOKMARK: token})
    assert updated.status_code == 200, updated.text
    newer = updated.headers[BOOKMARK]
    assert newer != token
    listed = writer.get("/v1/capsules", params={"project_id": "ryw", "tier": "archived"}, headers={BOOKMARK: newer})
    assert [c["id"] for c in listed.json()["capsules"]] == [capsule_id]


@pytest.mark.parametrize("token", ["not-a-bookmark", "v1.!!!", "v1.eyJhIjoxfQ"])
def test_a_bookmark_this_service_did_not_issue_is_a_400_naming_the_header(db, two_workers, token):
    client, _ = two_workers
    response = client.post("/v1/memory_bootstrap", json={}, headers={BOOKMARK: token})
    assert response.status_code == 400, response.text
    assert response.json()["error"]["field"] == BOOKMARK
    assert "bookmark" in response.json()["error"]["message"]


def test_a_well_formed_bookmark_neo4j_never_issued_is_a_400(db, two_workers):
    import base64
    import json

    client, _ = two_workers
    forged = "v1." + base64.urlsafe_b64encode(json.dumps(["FB:not-a-real-bookmark"]).encode()).decode().rstrip("=")
    response = client.post("/v1/memory_bootstrap", json={}, headers={BOOKMARK: forged})
    assert response.status_code == 400, response.text
    assert response.json()["error"]["field"] == BOOKMARK


def established(pid: int, port: int) -> int:
    """How many established TCP connections on the service's `port` process `pid` holds open."""
    inodes = set()
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        try:
            target = os.readlink(fd)
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(target[len("socket:["):-1])
    count = 0
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            fields = line.split()
            local_port = int(fields[1].rsplit(":", 1)[1], 16)
            if local_port == port and fields[3] == "01" and fields[9] in inodes:  # 01 = ESTABLISHED
                count += 1
    return count


def test_agents_connecting_together_are_spread_over_the_workers(db, two_workers):
    # Sixteen keep-alive clients opening their connections at once: with one socket shared by the
    # workers, the first worker to wake accepted them all. With a socket per worker (SO_REUSEPORT)
    # the kernel hashes each connection to one of them: all 16 on one worker has odds 2 * 2^-16.
    client, proc = two_workers
    port = int(str(client.base_url).rsplit(":", 1)[1].rstrip("/"))
    agents = [httpx.Client(base_url=client.base_url, timeout=30.0) for _ in range(16)]
    try:
        barrier = threading.Barrier(len(agents))

        def first_call(agent: httpx.Client) -> None:
            barrier.wait()
            assert agent.get("/healthz").status_code == 200

        threads = [threading.Thread(target=first_call, args=(agent,)) for agent in agents]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        held = [established(worker, port) for worker in children(proc.pid)]
        assert sum(held) >= len(agents), held
        assert len(held) == 2 and min(held) > 0, held
    finally:
        for agent in agents:
            agent.close()
