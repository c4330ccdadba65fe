"""Load shedding: at most `limit` requests per process wait on Neo4j at once; the rest get a fast 503.

`limit` is this process's share of GRAPHSVC_MAX_INFLIGHT (graphsvc.config.worker_share).

Past saturation a closed queue only grows: every extra waiting request adds its service time to
everyone's latency (the issue measured p95 1.2 s at 64 clients) and throughput falls as threads,
connections and Neo4j contend. Refusing the excess at the door, before its body is read, keeps
admitted requests at their saturated latency and tells the caller exactly what to do
(`Retry-After`). One event loop per process, so a plain counter is exact. Health probes, the
OpenAPI document and everything outside `prefixes` are never shed. Pure ASGI, no route code.
"""

from __future__ import annotations

import json

from starlette.types import ASGIApp, Receive, Scope, Send

#: Where the auth middleware leaves the caller (graphsvc.surfaces.http.auth.PRINCIPAL_STATE).
PRINCIPAL_STATE = "graphsvc.principal"

#: What reaches Neo4j: the JSON API and the MCP endpoint.
SHED_PREFIXES = ("/v1/", "/mcp")
#: A watch (SPEC §13) waits without a thread or a connection, for up to a minute: it is not in flight
#: on Neo4j, so it is not counted (graphsvc.surfaces.watching caps the watches per process instead).
WATCH_SUFFIX = "/watch"
#: The MCP endpoint answers everything but POST at once, without Neo4j (graphsvc.surfaces.mcp.PostOnly):
#: an agent's GET for a stream must get that 405 even at the limit, not a 503 it would retry.
MCP_PATH = "/mcp"
RETRY_AFTER_SECONDS = 1


class LoadShedding:
    def __init__(self, app: ASGIApp, limit: int, prefixes: tuple[str, ...] = SHED_PREFIXES):
        if limit < 1:
            raise ValueError("the in-flight limit must be at least 1")
        self.app = app
        self.limit = limit
        self.prefixes = prefixes
        self.in_flight = 0
        self.shed = 0  # refused since start-up (a metric for whoever wants it)
        self._body = json.dumps({"error": {
            "code": "overloaded",
            "message": f"this graphsvc process is serving its limit of {limit} requests (its share of GRAPHSVC_MAX_INFLIGHT); "
                       f"retry after {RETRY_AFTER_SECONDS} s",
        }}).encode()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if (scope["type"] != "http" or not scope["path"].startswith(self.prefixes)
                or (scope["path"] == MCP_PATH and scope["method"] != "POST") or scope["path"].endswith(WATCH_SUFFIX)):
            await self.app(scope, receive, send)
            return
        if self.in_flight >= self.limit:
            self.shed += 1
            await send({"type": "http.response.start", "status": 503, "headers": [
                (b"content-type", b"application/json"), (b"content-length", str(len(self._body)).encode()),
                (b"retry-after", str(RETRY_AFTER_SECONDS).encode())]})
            await send({"type": "http.response.body", "body": self._body})
            return
        self.in_flight += 1
        try:
            await self.app(scope, receive, send)
        finally:
            self.in_flight -= 1


class KeyShare:
    """One API key's share of the in-flight limit (issue 27): at most `limit` of its requests wait on
    Neo4j at once in this process; past it that key gets the same fast 503 `overloaded`, while
    other keys are still admitted up to the process limit (LoadShedding, which runs first).

    Runs after auth, which puts the caller's Principal in the scope's state. Only API keys are
    counted: GRAPHSVC_API_TOKEN (the operator's) and auth-off callers are bounded by the process
    limit alone. `limit` is this process's share of GRAPHSVC_KEY_MAX_INFLIGHT.
    """

    def __init__(self, app: ASGIApp, limit: int, prefixes: tuple[str, ...] = SHED_PREFIXES):
        if limit < 1:
            raise ValueError("the per-key in-flight limit must be at least 1")
        self.app = app
        self.limit = limit
        self.prefixes = prefixes
        self.in_flight: dict[str, int] = {}
        self._body = json.dumps({"error": {
            "code": "overloaded",
            "message": f"this API key has {limit} requests in flight on this graphsvc process, its share of "
                       f"GRAPHSVC_KEY_MAX_INFLIGHT; wait for an answer, or retry after {RETRY_AFTER_SECONDS} s",
        }}).encode()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        principal = scope.get("state", {}).get(PRINCIPAL_STATE)
        key_id = getattr(principal, "key_id", None)
        if (key_id is None or scope["type"] != "http" or not scope["path"].startswith(self.prefixes)
                or (scope["path"] == MCP_PATH and scope["method"] != "POST") or scope["path"].endswith(WATCH_SUFFIX)):
            await self.app(scope, receive, send)
            return
        if self.in_flight.get(key_id, 0) >= self.limit:
            await send({"type": "http.response.start", "status": 503, "headers": [
                (b"content-type", b"application/json"), (b"content-length", str(len(self._body)).encode()),
                (b"retry-after", str(RETRY_AFTER_SECONDS).encode())]})
            await send({"type": "http.response.body", "body": self._body})
            return
        self.in_flight[key_id] = self.in_flight.get(key_id, 0) + 1
        try:
            await self.app(scope, receive, send)
        finally:
            left = self.in_flight[key_id] - 1
            if left:
                self.in_flight[key_id] = left
            else:
                del self.in_flight[key_id]  # the map holds only keys with requests in flight
