"""An import or export whose HTTP client goes away stops: it starts no further transaction.

A real uvicorn server (in this process, so the transaction count can be watched) and a raw socket
client that sends its request and then resets the connection part way through the work.
"""

from __future__ import annotations

import socket
import struct
import threading
import time
from datetime import datetime, timezone
from typing import Iterator

import httpx
import pytest
import uvicorn

from graphsvc.clock import fixed_clock
from graphsvc.service import GraphService
from graphsvc.store import transfer
from graphsvc.store.migrate import verify
from graphsvc.surfaces.http.app import create_app
from tests.integration.live_server import started_client
from tests.integration.test_import_resume import source_text

NOW = datetime(2026, 12, 6, 12, 0, tzinfo=timezone.utc)
CAPSULES = 2000


class Counted:
    """Counts the transactions the service starts (and slows each a little, so a client can leave
    while many are still to come)."""

    def __init__(self, db, monkeypatch, delay: float) -> None:
        self.count = 0
        for name in ("write", "read"):
            original = getattr(db, name)

            def counted(work, original=original):
                self.count += 1
                time.sleep(delay)
                return original(work)

            monkeypatch.setattr(db, name, counted)


@pytest.fixture
def server(db) -> Iterator[tuple[str, int]]:
    app = create_app(GraphService(db, clock=fixed_clock(NOW)))
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    config = uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", lifespan="on")
    running = uvicorn.Server(config)
    thread = threading.Thread(target=running.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 90
    while not running.started:
        assert time.monotonic() < deadline and thread.is_alive()
        time.sleep(0.05)
    # The app starts up in the background (Neo4j, schema, warm-up): serving is not yet ready.
    with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=5) as client:
        while client.get("/readyz").status_code != 200:
            assert time.monotonic() < deadline
            time.sleep(0.1)
    try:
        yield "127.0.0.1", port
    finally:
        running.should_exit = True
        thread.join(timeout=30)


def reset(sock: socket.socket) -> None:
    """Close with a TCP reset, as a killed client does."""
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    sock.close()


def settled(counter: Counted, quiet: float = 1.5, limit: float = 30.0) -> int:
    """The transaction count once it stopped moving for `quiet` seconds."""
    deadline = time.monotonic() + limit
    last, since = counter.count, time.monotonic()
    while time.monotonic() - since < quiet:
        assert time.monotonic() < deadline, "transactions kept starting after the client left"
        time.sleep(0.05)
        if counter.count != last:
            last, since = counter.count, time.monotonic()
    return last


def test_an_import_whose_client_disconnects_stops_and_a_rerun_completes_it(db, server, monkeypatch):
    monkeypatch.setattr(transfer, "IMPORT_CHUNK", 50)
    text = source_text(CAPSULES, 7).encode("utf-8")
    counter = Counted(db, monkeypatch, delay=0.05)
    host, port = server
    sock = socket.create_connection((host, port))
    sock.sendall(b"POST /v1/capsules/import HTTP/1.1\r\nHost: test\r\nContent-Type: application/x-ndjson\r\n"
                 + f"Content-Length: {len(text)}\r\n\r\n".encode() + text)
    deadline = time.monotonic() + 60
    # about 80 transactions in all: a dozen mark the store, raise the counter and check it, 40 write
    # the capsules, then the edges and the refresh of their targets follow (about 30): at 30 the
    # capsules are half written and most transactions are still to come
    while counter.count < 30:
        assert time.monotonic() < deadline
        time.sleep(0.01)
    at_reset = counter.count
    reset(sock)
    after = settled(counter)
    assert after - at_reset < 5, (at_reset, after)

    with httpx.Client(base_url=f"http://{host}:{port}", timeout=120) as client:
        done = client.post("/v1/capsules/import", content=text, headers={"content-type": "application/x-ndjson"})
        assert done.status_code == 201, done.text
        assert done.json()["capsules"] + done.json()["already_present"]["capsules"] == CAPSULES
        assert client.get("/v1/capsules/export").content == text
    assert verify(db).clean


def test_an_export_whose_client_disconnects_starts_no_further_page(db, server, monkeypatch):
    service = GraphService(db, clock=fixed_clock(NOW))
    service.import_lines(source_text(CAPSULES, 8).splitlines())
    monkeypatch.setattr(transfer, "EXPORT_PAGE", 5)
    pages = {"count": 0}
    original = db.query

    def slow_page(name, **params):
        pages["count"] += 1
        time.sleep(0.02)
        return original(name, **params)

    monkeypatch.setattr(db, "query", slow_page)
    host, port = server
    sock = socket.create_connection((host, port))
    sock.sendall(b"GET /v1/capsules/export HTTP/1.1\r\nHost: test\r\n\r\n")
    assert sock.recv(100).startswith(b"HTTP/1.1 200")
    at_reset = pages["count"]
    reset(sock)
    deadline = time.monotonic() + 30
    last, since = pages["count"], time.monotonic()
    while time.monotonic() - since < 1.5:
        assert time.monotonic() < deadline, "pages kept being read after the client left"
        time.sleep(0.05)
        if pages["count"] != last:
            last, since = pages["count"], time.monotonic()
    # the capsule pages still to come were CAPSULES / 5 = 400; only those in flight may follow
    assert last - at_reset < 20, (at_reset, last)


def test_an_import_transaction_that_outlives_the_bound_is_a_503_and_the_import_starts_no_more(db, monkeypatch):
    """A hung transaction (a frozen Neo4j) is a 503 after the request's bound, per transaction; the
    import's thread then stops before its next transaction, and a re-run completes the import."""
    monkeypatch.setattr(transfer, "IMPORT_CHUNK", 50)
    text = source_text(300, 9).encode("utf-8")
    service = GraphService(db, clock=fixed_clock(NOW))
    monkeypatch.setattr(GraphService, "request_bound", property(lambda self: 1.0), raising=False)
    writes = {"count": 0}
    original = db.write

    def hangs_once(work):
        writes["count"] += 1
        if writes["count"] == 4:
            time.sleep(3.0)  # longer than the bound: the caller must not wait for it
        return original(work)

    monkeypatch.setattr(db, "write", hangs_once)
    with started_client(create_app(service)) as client:
        writes["count"] = 0  # the app's start-up warms the write plans with writes of its own
        began = time.monotonic()
        answer = client.post("/v1/capsules/import", content=text, headers={"content-type": "application/x-ndjson"})
        waited = time.monotonic() - began
        assert answer.status_code == 503 and answer.headers.get("retry-after"), answer.text
        assert waited < 3.0, waited
        time.sleep(3.5)  # the hung transaction ends; the thread must not start another
        assert writes["count"] == 4, writes
        monkeypatch.setattr(db, "write", original)
        done = client.post("/v1/capsules/import", content=text, headers={"content-type": "application/x-ndjson"})
        assert done.status_code == 201 and done.json()["already_present"]["capsules"] > 0, done.text
        assert client.get("/v1/capsules/export").content == text
