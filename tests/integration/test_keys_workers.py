"""API keys under `graphsvc serve --workers 2` (issue 27): keys created, used and revoked while two
worker processes serve them: every worker accepts a new key at once (a lookup miss asks Neo4j)
and refuses a revoked one within its one-second cache. Real processes, configured by environment."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import httpx

from tests.integration.live_server import free_port
from tests.integration.test_workers import children

TOKEN = "workers-env-token-27"


def test_two_workers_accept_a_new_key_and_refuse_it_within_a_second_of_revocation(db, neo4j_target):
    port = free_port()
    env = {**os.environ, "NEO4J_URI": neo4j_target.uri, "NEO4J_USER": neo4j_target.user,
           "NEO4J_PASSWORD": neo4j_target.password, "GRAPHSVC_PORT": str(port), "GRAPHSVC_LOG_LEVEL": "warning",
           "GRAPHSVC_WORKERS": "2", "GRAPHSVC_API_TOKEN": TOKEN}
    env.pop("PROMETHEUS_MULTIPROC_DIR", None)
    log = Path(os.environ.get("TMPDIR", "/tmp")) / f"graphsvc-keys-workers-{port}.log"
    with open(log, "wb") as out:
        proc = subprocess.Popen([sys.executable, "-m", "graphsvc", "serve"], env=env, stdout=out, stderr=out)
    admin = {"Authorization": f"Bearer {TOKEN}"}
    client = httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=30.0)
    try:
        deadline = time.monotonic() + 90
        in_a_row = 0  # /readyz is each worker's own: ready means 20 fresh connections in a row, any worker
        while in_a_row < 20:
            try:
                ready = httpx.get(f"http://127.0.0.1:{port}/readyz", headers=admin, timeout=30).status_code == 200
            except httpx.TransportError:
                ready = False
            in_a_row = in_a_row + 1 if ready and len(children(proc.pid)) >= 2 else 0
            assert proc.poll() is None, log.read_text()
            assert time.monotonic() < deadline, log.read_text()
            if not in_a_row:
                time.sleep(0.2)
        for round_ in range(3):  # create, use on both workers, revoke: three times over
            made = client.post("/v1/keys", json={"label": f"agent-{round_}", "rights": "write", "prefixes": ["shop"]},
                               headers=admin)
            assert made.status_code == 201, made.text
            key = {"Authorization": f"Bearer {made.json()['key']}"}
            # fresh connections, which the kernel hands to either worker: a worker without the key cached finds it
            answers = [httpx.post(f"http://127.0.0.1:{port}/v1/memory_bootstrap", json={}, headers=key, timeout=30)
                       for _ in range(12)]
            assert {a.status_code for a in answers} == {200}, [a.text for a in answers]
            assert client.post(f"/v1/keys/{made.json()['id']}/revoke", headers=admin).status_code == 200
            time.sleep(1.05)  # every worker's cached lookup has expired
            refused = [httpx.post(f"http://127.0.0.1:{port}/v1/memory_bootstrap", json={}, headers=key, timeout=30)
                       for _ in range(12)]
            assert {a.status_code for a in refused} == {401}, [a.text for a in refused]
            assert "revoked" in refused[0].json()["error"]["message"]
    finally:
        client.close()
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
