"""Watches across service processes (SPEC §13), with real `graphsvc serve` processes on the test Neo4j:

- a watch on one process wakes for a write sent to ANOTHER process (the signal is in Neo4j), also
  with `--workers 2` behind one port;
- SIGTERM ends a waiting watch at once (503: send it again), long before the shutdown grace;
- `graphsvc watch` prints the first pack, then each new one, one canonical line each.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time

import httpx
import pytest

from tests.integration.test_workers import serve


def _watching(client: httpx.Client, scope: dict, wait_s: int = 30) -> tuple[threading.Thread, list]:
    """A capsule written to `scope`, then a watch of its pack's ETag, waiting in a thread: (thread, its answers)."""
    client.post("/v1/capsules", json={**scope, "kind": "task", "content": "First task"})
    tag = client.post("/v1/memory_bootstrap", json=scope).headers["etag"]
    results: list = []
    watcher = threading.Thread(target=_watch, args=(client, {**scope, "etag": tag, "wait_s": wait_s}, results))
    watcher.start()
    return watcher, results


def _watch(client: httpx.Client, body: dict, results: list, started: threading.Event | None = None) -> None:
    if started is not None:
        started.set()
    begun = time.monotonic()
    answer = client.post("/v1/memory_bootstrap/watch", json=body, timeout=90)
    results.append((answer, time.monotonic() - begun))


def test_a_write_through_another_process_wakes_the_watch(neo4j_target, database):
    database.wipe_all()
    with serve(neo4j_target) as (one, _), serve(neo4j_target) as (other, _):
        watcher, results = _watching(one, {"project_id": "fleet"})
        time.sleep(1.5)
        other.post("/v1/capsules", json={"project_id": "fleet", "kind": "constraint", "content": "Written elsewhere"})
        wrote = time.monotonic()
        watcher.join(60)
        answer, took = results[0]
        assert answer.status_code == 200 and "Written elsewhere" in answer.text
        assert took < 1.5 + 8 and time.monotonic() - wrote < 8
        assert answer.headers["etag"] == other.post("/v1/memory_bootstrap", json={"project_id": "fleet"}).headers["etag"]


def test_with_two_workers_every_watch_wakes_for_a_write_in_scope(neo4j_target, database):
    database.wipe_all()
    with serve(neo4j_target, workers=2) as (client, _):
        client.post("/v1/capsules", json={"project_id": "pair", "kind": "task", "content": "First task"})
        tag = client.post("/v1/memory_bootstrap", json={"project_id": "pair"}).headers["etag"]
        results: list = []
        # Several watches over separate connections: the kernel spreads them over both workers.
        clients = [httpx.Client(base_url=str(client.base_url), timeout=90) for _ in range(6)]
        threads = [threading.Thread(target=_watch, args=(c, {"project_id": "pair", "etag": tag, "wait_s": 30}, results))
                   for c in clients]
        for thread in threads:
            thread.start()
        time.sleep(2.0)
        client.post("/v1/capsules", json={"project_id": "pair", "kind": "decision", "content": "Decided"})
        for thread in threads:
            thread.join(60)
        for c in clients:
            c.close()
        assert len(results) == 6
        assert all(answer.status_code == 200 and "Decided" in answer.text for answer, _ in results)
        assert all(took < 2.0 + 8 for _, took in results)


def test_sigterm_ends_a_waiting_watch_at_once(neo4j_target, database):
    database.wipe_all()
    os.environ["GRAPHSVC_SHUTDOWN_GRACE_S"] = "30"
    try:
        with serve(neo4j_target) as (client, proc):
            watcher, results = _watching(client, {"project_id": "stop"}, wait_s=60)
            time.sleep(1.5)
            signalled = time.monotonic()
            proc.send_signal(signal.SIGTERM)
            watcher.join(30)
            answer, _ = results[0]
            assert answer.status_code == 503 and "send the watch again" in answer.text
            assert "retry-after" in answer.headers
            proc.wait(timeout=30)
            assert time.monotonic() - signalled < 10  # not the 30 s grace, nor the 60 s wait
    finally:
        os.environ.pop("GRAPHSVC_SHUTDOWN_GRACE_S", None)


def test_graphsvc_watch_prints_the_first_pack_then_each_new_one(neo4j_target, database):
    database.wipe_all()
    with serve(neo4j_target) as (client, _):
        client.post("/v1/capsules", json={"project_id": "hook", "kind": "task", "content": "First task"})
        env = {**os.environ, "GRAPHSVC_URL": str(client.base_url)}
        env.pop("GRAPHSVC_API_TOKEN", None)
        proc = subprocess.Popen([sys.executable, "-m", "graphsvc", "watch", "bootstrap", "--project-id", "hook",
                                 "--wait-s", "5", "--count", "2"], env=env, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)
        try:
            first = json.loads(proc.stdout.readline())
            assert first["ready"]["next_action"]["headline"] == "First task"
            client.post("/v1/capsules", json={"project_id": "hook", "kind": "constraint", "content": "Hook rule"})
            second = proc.stdout.readline()
            assert proc.wait(timeout=30) == 0
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        assert "Hook rule" in second and json.loads(second)["constraints"][0]["headline"] == "Hook rule"
        current = client.post("/v1/memory_bootstrap", json={"project_id": "hook"})
        assert {**json.loads(second), "as_of": None} == {**current.json(), "as_of": None}


@pytest.mark.parametrize("argv, field", [
    (["--wait-s", "0"], "wait_s"),
    (["--terms", "x", "--newest", "1"], "newest"),
])
def test_graphsvc_watch_refuses_bad_options_with_one_line(argv, field):
    done = subprocess.run([sys.executable, "-m", "graphsvc", "watch", "bootstrap", *argv], capture_output=True,
                          text=True, timeout=60, env={**os.environ, "GRAPHSVC_URL": "http://127.0.0.1:9"})
    assert done.returncode == 2 and done.stderr.count("\n") == 1 and field in done.stderr


def test_graphsvc_watch_reports_a_refused_request_and_exits_2(neo4j_target, database):
    with serve(neo4j_target) as (client, _):
        done = subprocess.run([sys.executable, "-m", "graphsvc", "watch", "bootstrap", "--project-prefix", "bad/"],
                              capture_output=True, text=True, timeout=60,
                              env={**os.environ, "GRAPHSVC_URL": str(client.base_url)})
    assert done.returncode == 2 and "400" in done.stderr and "project_prefix" in done.stderr
