"""One connection failure is not an outage (graphsvc.store.db.Database.connectivity_failed).

A TCP proxy between the service's driver and the real Neo4j makes the failures: "break" lets a new
connection complete the Bolt handshake (so a fresh probe sees a live server) and then cuts it at its
first message, the way a dropped pooled connection or a server-side reset looks to the driver;
"refuse" cuts every connection at once, the way a stopped Neo4j looks.
"""

from __future__ import annotations

import socket
import threading
import time
from typing import Iterator
from urllib.parse import urlsplit

import pytest

from graphsvc.errors import Unavailable
from graphsvc.request_context import call_deadline
from graphsvc.store.db import Database, TransientUnavailable

HANDSHAKE = 20  # bytes of the Bolt preamble and version proposals a client sends first


class FaultyProxy:
    def __init__(self, upstream: tuple[str, int]):
        self.upstream = upstream
        self.mode = "forward"  # or "break", "refuse"
        self.listener = socket.socket()
        self.listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(128)
        self.port = self.listener.getsockname()[1]
        self.sockets: list[socket.socket] = []
        self.closed = False
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while not self.closed:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            if self.mode == "refuse":
                client.close()
                continue
            try:
                server = socket.create_connection(self.upstream, timeout=5)
            except OSError:
                client.close()
                continue
            server.settimeout(None)
            self.sockets += [client, server]
            threading.Thread(target=self._pump, args=(client, server, True), daemon=True).start()
            threading.Thread(target=self._pump, args=(server, client, False), daemon=True).start()

    def _pump(self, source: socket.socket, sink: socket.socket, from_client: bool) -> None:
        sent = 0
        try:
            while True:
                chunk = source.recv(65536)
                if not chunk or self.mode == "refuse" or (from_client and self.mode == "break" and sent >= HANDSHAKE):
                    break
                sink.sendall(chunk)
                sent += len(chunk)
        except OSError:
            pass
        for sock in (source, sink):
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            sock.close()

    def cut_all(self) -> None:
        for sock in self.sockets:
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        self.sockets = []

    def close(self) -> None:
        self.closed = True
        self.listener.close()
        self.cut_all()


@pytest.fixture
def proxied(neo4j_target, database) -> Iterator[tuple[FaultyProxy, Database, list[float]]]:
    parts = urlsplit(neo4j_target.uri)
    proxy = FaultyProxy((parts.hostname or "127.0.0.1", parts.port or 7687))
    db = Database(f"bolt://127.0.0.1:{proxy.port}", neo4j_target.user, neo4j_target.password,
                  timeout=2.0, query_timeout=5.0)
    rewarms: list[float] = []
    db.on_reconnect = lambda: rewarms.append(time.monotonic())
    try:
        assert db.query("ping")  # a pooled connection through the proxy
        yield proxy, db, rewarms
    finally:
        db.close()
        proxy.close()


def within(seconds: float):
    class Bound:
        def __enter__(self):
            self.reset = call_deadline.set(time.monotonic() + seconds)

        def __exit__(self, *exc):
            call_deadline.reset(self.reset)

    return Bound()


def test_a_transient_failure_is_retried_within_the_deadline_and_is_no_outage(proxied):
    proxy, db, rewarms = proxied
    proxy.mode = "break"
    proxy.cut_all()  # the pooled connection dies too
    heal = threading.Timer(1.5, lambda: setattr(proxy, "mode", "forward"))  # past the driver's own retries
    heal.start()
    began = time.monotonic()
    with within(6.0):
        records = db.query("ping")
    took = time.monotonic() - began
    heal.join()
    assert records and 1.4 < took < 6.0, took  # it failed for 1.5 s, then a retry succeeded
    assert db.outage is False
    time.sleep(0.2)
    assert rewarms == []  # no outage, so no re-warm: packs were never refused for it


def test_a_transient_failure_past_the_deadline_is_a_503_but_still_no_outage(proxied):
    proxy, db, rewarms = proxied
    proxy.mode = "break"
    proxy.cut_all()
    began = time.monotonic()
    with within(1.5), pytest.raises(TransientUnavailable):
        db.query("ping")
    assert time.monotonic() - began < 1.5 + 1.0  # the deadline, plus one attempt under way
    assert db.outage is False
    proxy.mode = "forward"
    assert db.query("ping")
    time.sleep(0.2)
    assert rewarms == []


def test_an_unreachable_neo4j_is_an_outage_at_once_and_the_first_success_rewarms(proxied):
    proxy, db, rewarms = proxied
    proxy.mode = "refuse"
    proxy.cut_all()
    began = time.monotonic()
    with within(7.0), pytest.raises(Unavailable) as refused:
        db.query("ping")
    assert not isinstance(refused.value, TransientUnavailable)
    assert time.monotonic() - began < 2.0  # no retrying against a dead server: a fast 503
    assert db.outage is True
    with within(7.0), pytest.raises(Unavailable):
        db.query("ping")  # in outage mode: refused at once again
    proxy.mode = "forward"
    try:
        db.query("ping")  # the call that probes: a 503 while the re-warm it started still runs
    except Unavailable as exc:
        assert "being compiled" in str(exc)
    assert db.outage is False
    assert db.wait_warm(5.0)
    assert db.query("ping")
    deadline = time.monotonic() + 5
    while not rewarms and time.monotonic() < deadline:
        time.sleep(0.05)
    assert len(rewarms) == 1  # Neo4j came back: the plans are warmed again, once


def test_after_an_outage_no_call_runs_its_statements_before_the_rewarm_has_begun(proxied):
    """The call that finds Neo4j back sends the probe in its place and is a 503; the re-warm is
    under way before any call's own statements run, and calls meanwhile are refused without them."""
    proxy, db, rewarms = proxied
    release = threading.Event()

    def rewarm() -> None:
        rewarms.append(time.monotonic())
        release.wait(30)

    db.on_reconnect = rewarm
    proxy.mode = "refuse"
    proxy.cut_all()
    with within(7.0), pytest.raises(Unavailable):
        db.query("ping")
    assert db.outage is True
    proxy.mode = "forward"
    ran: list[str] = []
    try:
        with within(7.0), pytest.raises(Unavailable) as refused:
            db.read(lambda tx: ran.append("first"))
        assert "being compiled" in str(refused.value)
        assert db.outage is False and db.warming and len(rewarms) == 1
        assert ran == []  # the probe ran in its place
    finally:
        release.set()
    assert db.wait_warm(10.0)
    assert db.read(lambda tx: ran.append("after")) is None
    assert ran == ["after"] and len(rewarms) == 1


def test_one_outage_probe_at_a_time_the_others_are_refused_at_once(proxied):
    proxy, db, rewarms = proxied
    proxy.mode = "refuse"
    proxy.cut_all()
    with within(7.0), pytest.raises(Unavailable):
        db.query("ping")
    ran: list[str] = []
    with db._probing:  # a probe under way in another call
        proxy.mode = "forward"
        began = time.monotonic()
        with within(7.0), pytest.raises(Unavailable) as refused:
            db.read(lambda tx: ran.append("run"))
        assert time.monotonic() - began < 0.5
        assert "not reachable" in str(refused.value)
    assert ran == [] and db.outage is True and rewarms == []
    db.on_reconnect = None  # a Database with no re-warm (the CLI's): the call that probes then runs
    assert db.query("ping")
    assert db.outage is False
