"""Load shedding (issue 11): past its in-flight limit a process answers a fast 503 + Retry-After.

Pure ASGI: the shedding middleware around an app whose requests wait until the test lets them go.
"""

from __future__ import annotations

import asyncio

import httpx
import pytest

from graphsvc.config import worker_share
from graphsvc.surfaces.http.shedding import RETRY_AFTER_SECONDS, LoadShedding


class HeldApp:
    """Every request waits for `release`; `entered` counts the ones that got in."""

    def __init__(self) -> None:
        self.release = asyncio.Event()
        self.entered = 0

    async def __call__(self, scope, receive, send) -> None:
        self.entered += 1
        await self.release.wait()
        await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"text/plain")]})
        await send({"type": "http.response.body", "body": b"served"})


async def _shed_past_the_limit() -> None:
    held = HeldApp()
    app = LoadShedding(held, limit=3)
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://test") as client:
        admitted = [asyncio.create_task(client.post("/v1/memory_bootstrap")) for _ in range(3)]
        while held.entered < 3:
            await asyncio.sleep(0.001)
        refused = await asyncio.wait_for(client.post("/v1/memory_bootstrap"), timeout=1.0)  # not queued: answered now
        assert refused.status_code == 503
        assert refused.headers["retry-after"] == str(RETRY_AFTER_SECONDS)
        assert refused.json()["error"]["code"] == "overloaded"
        assert "GRAPHSVC_MAX_INFLIGHT" in refused.json()["error"]["message"]
        assert held.entered == 3  # the refused request never reached the app
        probe = asyncio.create_task(client.get("/healthz"))  # probes are never shed (this one is held too)
        while held.entered < 4:
            await asyncio.sleep(0.001)
        held.release.set()
        assert [r.status_code for r in await asyncio.gather(*admitted, probe)] == [200, 200, 200, 200]
        assert (await client.post("/v1/memory_bootstrap")).status_code == 200  # the slots are free again
        assert app.shed == 1 and app.in_flight == 0


def test_requests_past_the_limit_get_a_fast_503_with_retry_after_and_never_reach_the_app():
    asyncio.run(_shed_past_the_limit())


@pytest.mark.parametrize(("limit", "workers", "share"), [(32, 1, 32), (32, 2, 16), (32, 3, 11), (32, 8, 4), (2, 4, 1)])
def test_the_workers_share_the_service_limit(limit, workers, share):
    assert worker_share(limit, workers) == share


async def _mcp_get_passes_at_the_limit() -> None:
    held = HeldApp()
    app = LoadShedding(held, limit=1)
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://test") as client:
        busy = asyncio.create_task(client.post("/mcp"))
        while held.entered < 1:
            await asyncio.sleep(0.001)
        assert (await asyncio.wait_for(client.post("/mcp"), timeout=1.0)).status_code == 503
        # GET / DELETE /mcp never reach Neo4j (answered 405 by the endpoint): the shedder lets them through
        stream = asyncio.create_task(client.get("/mcp"))
        while held.entered < 2:
            await asyncio.sleep(0.001)
        held.release.set()
        assert (await busy).status_code == 200 and (await stream).status_code == 200


def test_an_mcp_get_is_never_shed():
    asyncio.run(_mcp_get_passes_at_the_limit())


class _Key:
    def __init__(self, key_id):
        self.key_id = key_id


def _as(app, key_id):
    """The app behind auth: the caller's principal in the scope's state, as BearerTokenAuth leaves it."""
    async def with_principal(scope, receive, send):
        scope.setdefault("state", {})["graphsvc.principal"] = _Key(key_id)
        await app(scope, receive, send)
    return with_principal


async def _one_key_is_shed_while_others_are_served() -> None:
    from graphsvc.surfaces.http.shedding import KeyShare

    held = HeldApp()
    share = KeyShare(held, limit=2)
    runaway = httpx.AsyncClient(transport=httpx.ASGITransport(app=_as(share, "aaaaaaaaaaaa")), base_url="http://t")
    other = httpx.AsyncClient(transport=httpx.ASGITransport(app=_as(share, "bbbbbbbbbbbb")), base_url="http://t")
    token = httpx.AsyncClient(transport=httpx.ASGITransport(app=_as(share, None)), base_url="http://t")
    async with runaway, other, token:
        admitted = [asyncio.create_task(runaway.post("/v1/memory_bootstrap")) for _ in range(2)]
        while held.entered < 2:
            await asyncio.sleep(0.001)
        refused = await asyncio.wait_for(runaway.post("/v1/memory_bootstrap"), timeout=1.0)
        assert refused.status_code == 503 and refused.json()["error"]["code"] == "overloaded"
        assert "GRAPHSVC_KEY_MAX_INFLIGHT" in refused.json()["error"]["message"]
        served = [asyncio.create_task(other.post("/v1/memory_bootstrap")) for _ in range(2)]
        served.append(asyncio.create_task(token.post("/v1/memory_bootstrap")))  # the env token: process limit only
        served.append(asyncio.create_task(token.post("/v1/memory_bootstrap")))
        served.append(asyncio.create_task(token.post("/v1/memory_bootstrap")))
        while held.entered < 7:
            await asyncio.sleep(0.001)
        held.release.set()
        assert {r.status_code for r in await asyncio.gather(*admitted, *served)} == {200}
        assert share.in_flight == {}


def test_a_runaway_key_gets_503_while_other_keys_are_served():
    asyncio.run(_one_key_is_shed_while_others_are_served())
