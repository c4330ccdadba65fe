"""SIGTERM drains: `graphsvc serve` stops accepting connections, lets in-flight requests finish for
GRAPHSVC_SHUTDOWN_GRACE_S, then exits (closing its Neo4j driver in the app's shutdown).

The slow in-flight request is a real one: a write whose body the client sends in two parts, the
second only after the signal, so the server is mid-request when it is told to stop.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Iterator

import httpx
import pytest

from .live_server import free_port

BODY = json.dumps({"project_id": "shutdown", "kind": "fact", "content": "finished after SIGTERM"}).encode()


def serve(neo4j_target, tmp_path: Path, grace: float) -> tuple[subprocess.Popen, int, Path]:
    port = free_port()
    env = {**os.environ, "NEO4J_URI": neo4j_target.uri, "NEO4J_USER": neo4j_target.user,
           "NEO4J_PASSWORD": neo4j_target.password, "GRAPHSVC_PORT": str(port), "GRAPHSVC_WORKERS": "1",
           "GRAPHSVC_SHUTDOWN_GRACE_S": str(grace), "GRAPHSVC_LOG_LEVEL": "info"}
    env.pop("GRAPHSVC_API_TOKEN", None)
    log = tmp_path / f"serve-{port}.log"
    with open(log, "wb") as out:
        proc = subprocess.Popen([sys.executable, "-m", "graphsvc", "serve"], env=env, stdout=out, stderr=out)
    deadline = time.monotonic() + 120
    while True:
        try:
            if httpx.get(f"http://127.0.0.1:{port}/readyz", timeout=10).status_code == 200:
                return proc, port, log
        except httpx.TransportError:
            pass
        assert proc.poll() is None and time.monotonic() < deadline, log.read_text()
        time.sleep(0.2)


@pytest.fixture
def stopper() -> Iterator[list[subprocess.Popen]]:
    procs: list[subprocess.Popen] = []
    yield procs
    for proc in procs:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def start_slow_write(port: int) -> socket.socket:
    """A POST whose headers and first half of the body are sent; the server is now mid-request."""
    conn = socket.create_connection(("127.0.0.1", port), timeout=30)
    conn.sendall(f"POST /v1/capsules HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/json\r\n"
                 f"Content-Length: {len(BODY)}\r\nConnection: close\r\n\r\n".encode() + BODY[:10])
    time.sleep(0.3)  # the server has read the headers and is waiting for the body
    return conn


def refused(port: int, limit: float = 3.0) -> bool:
    """True once a new connection to the port is refused (the listener is closed)."""
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
        except ConnectionRefusedError:
            return True
        time.sleep(0.05)
    return False


def test_sigterm_lets_an_in_flight_request_finish_and_refuses_new_connections(neo4j_target, tmp_path, stopper):
    proc, port, log = serve(neo4j_target, tmp_path, grace=10.0)
    stopper.append(proc)
    conn = start_slow_write(port)
    proc.send_signal(signal.SIGTERM)
    assert refused(port), "new connections were still accepted after SIGTERM"
    assert proc.poll() is None  # still draining the request in flight
    conn.sendall(BODY[10:])
    answer = b""
    while chunk := conn.recv(65536):
        answer += chunk
    conn.close()
    status_line, _, rest = answer.partition(b"\r\n")
    assert status_line.split()[1] == b"201", answer
    assert json.loads(rest.partition(b"\r\n\r\n")[2])["ids"]
    # uvicorn re-raises the signal it caught once it has shut down cleanly: exit by SIGTERM, or 0.
    assert proc.wait(timeout=10) in (0, -signal.SIGTERM), log.read_text()
    assert "Application shutdown complete" in log.read_text()  # the lifespan's shutdown ran: driver closed


def test_a_request_outliving_the_grace_is_cut_off_and_the_process_exits(neo4j_target, tmp_path, stopper):
    proc, port, log = serve(neo4j_target, tmp_path, grace=1.0)
    stopper.append(proc)
    conn = start_slow_write(port)  # never finished
    began = time.monotonic()
    proc.send_signal(signal.SIGTERM)
    proc.wait(timeout=15)
    took = time.monotonic() - began
    conn.close()
    assert 0.9 < took < 1.0 + 5.0, f"exited {took:.2f}s after SIGTERM with a 1 s grace"
