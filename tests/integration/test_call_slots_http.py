"""Call slots over real HTTP (graphsvc.surfaces.deadline.CallSlots): a service with one slot serves
concurrent requests one at a time, in the order they came, while /readyz answers at once."""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx

from graphsvc.service import GraphService
from graphsvc.surfaces.http.app import create_app

from .live_server import LiveServer

HOLD = 0.3


def test_one_slot_serves_requests_one_at_a_time_and_readyz_does_not_queue(db, clock) -> None:
    svc = GraphService(db, clock=clock, call_concurrency=1)
    lock = threading.Lock()
    state = {"running": 0, "most": 0}
    real_get = svc.get

    def slow_get(ids: Any) -> Any:
        with lock:
            state["running"] += 1
            state["most"] = max(state["most"], state["running"])
        try:
            time.sleep(HOLD)  # long enough for the other requests to arrive and wait
            return real_get(ids)
        finally:
            with lock:
                state["running"] -= 1

    with LiveServer(create_app(svc)) as server, httpx.Client(base_url=server.url, timeout=30) as http:
        created = http.post("/v1/capsules", json={"project_id": "p", "kind": "fact", "content": "x"})
        assert created.status_code == 201, created.text
        capsule_id = created.json()["ids"][0]
        svc.get = slow_get  # type: ignore[method-assign]

        def fetch(_: int) -> int:
            with httpx.Client(base_url=server.url, timeout=30) as own:
                return own.post("/v1/capsules/get", json={"ids": [capsule_id]}).status_code

        with ThreadPoolExecutor(4) as pool:
            began = time.monotonic()
            futures = [pool.submit(fetch, n) for n in range(4)]
            time.sleep(HOLD / 3)
            probe_began = time.monotonic()
            ready = http.get("/readyz")
            probe_took = time.monotonic() - probe_began
            statuses = [f.result() for f in futures]
            took = time.monotonic() - began

    assert statuses == [200] * 4
    assert state["most"] == 1
    assert took >= 4 * HOLD * 0.9  # one after the other
    # In line, the probe would have waited for all four (~4 x HOLD after it was sent).
    assert ready.status_code == 200 and probe_took < 3 * HOLD
