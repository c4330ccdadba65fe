"""Run a real uvicorn server for one test, on a free loopback port, in a thread."""

from __future__ import annotations

import socket
import threading
import time
from contextlib import contextmanager
from typing import Any, Iterator

import uvicorn
from starlette.testclient import TestClient

#: Start-up plans the pack's shapes on a cold Neo4j (seconds each on a busy machine).
START_UP_LIMIT = 120.0


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_started(app: Any, limit: float = START_UP_LIMIT) -> None:
    """Block until the app's background start-up is done (what /readyz reports, read in-process so
    that an app with an API token needs none here). An app that is not graphsvc's has none."""
    service = getattr(getattr(app, "state", None), "service", None)
    if service is not None and not service.wait_started(limit):
        raise RuntimeError(f"the app's start-up did not finish within {limit:.0f} s "
                           f"(waiting for {service.waiting_for()})")


@contextmanager
def started_client(app: Any, **kwargs: Any) -> Iterator[TestClient]:
    """`with TestClient(app)` (lifespan run) once the app's background start-up is done."""
    with TestClient(app, **kwargs) as client:
        wait_started(app)
        yield client


class LiveServer:
    """`with LiveServer(app) as server: server.url` — serving and started (schema, warm-up) on enter, stopped on exit.

    `wait_for_start_up=False`: serving is enough (an app whose Neo4j is down never finishes its start-up)."""

    def __init__(self, app: Any, wait_for_start_up: bool = True):
        self.app = app
        self.wait_for_start_up = wait_for_start_up
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        config = uvicorn.Config(app, host="127.0.0.1", port=self.port, log_level="warning", lifespan="on")
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(target=self._server.run, name=f"uvicorn-{self.port}", daemon=True)

    def __enter__(self) -> "LiveServer":
        self._thread.start()
        deadline = time.monotonic() + 30
        while not self._server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError(f"uvicorn did not start on {self.url}")
            time.sleep(0.05)
        if self.wait_for_start_up:
            wait_started(self.app)
        return self

    def __exit__(self, *exc: Any) -> None:
        self._server.should_exit = True
        self._thread.join(timeout=15)
