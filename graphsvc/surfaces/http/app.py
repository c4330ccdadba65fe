"""The Starlette application: route modules, error rendering, health, OpenAPI."""

from __future__ import annotations

import contextlib
import logging
from typing import Any, AsyncIterator

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from graphsvc import telemetry
from graphsvc.errors import ServiceError, Unavailable, with_request_id
from graphsvc.surfaces.mcp import McpHttpEndpoint
from graphsvc.service import GraphService
from graphsvc.surfaces.http import (bootstrap_routes, capsule_routes, claim_routes, key_routes, recall_routes,
                                    session_routes, watch_routes)
from graphsvc.config import Settings
from graphsvc.surfaces.deadline import RequestDeadline, call_slots, within
from graphsvc.surfaces.http.access_log import AccessLogMiddleware
from graphsvc.surfaces.http.auth import OPEN_PATHS, BearerTokenAuth
from graphsvc.surfaces.http.bookmark_header import BookmarkHeader
from graphsvc.surfaces.http.shedding import KeyShare, LoadShedding
from graphsvc.surfaces.http.common import call
from graphsvc.surfaces.http.json_errors import JsonErrorsMiddleware
from graphsvc.surfaces.http.metrics import MetricsMiddleware, metrics_route
from graphsvc.surfaces.http.openapi import Operation, build_document
from graphsvc.surfaces.http.request_id import HEADER as REQUEST_ID_HEADER, RequestIdMiddleware, request_id_of
from graphsvc.surfaces.watching import ChangeFeed, chain_shutdown_signals

log = logging.getLogger(__name__)

DEFAULT_MAX_INFLIGHT = Settings.model_fields["graphsvc_max_inflight"].default

ROUTE_MODULES = [capsule_routes, bootstrap_routes, recall_routes, session_routes, claim_routes, key_routes,
                 watch_routes]

#: What each step /readyz may wait for means (GraphService.waiting_for).
NOT_READY = {
    "neo4j": "Neo4j does not answer",
    "schema": "the schema and the write plans are being applied",
    "warm-up": "the pack's query plans are being compiled",
}
#: Seconds a shutdown waits for a background start-up step to give up before closing the driver.
START_UP_STOP_WAIT = 2.0

BASE_OPERATIONS = [
    Operation("GET", "/healthz", "The process is up", public=True, error_statuses=()),
    Operation("GET", "/readyz", "Ready to serve: Neo4j is reachable, the schema is applied and the query plans are warm",
              description="503 + Retry-After until then, with `waiting_for`: neo4j, schema or warm-up.",
              error_statuses=(401, 503)),
    Operation("GET", "/openapi.json", "This document", error_statuses=(401,)),
    Operation("GET", "/metrics", "Prometheus metrics (text exposition format)",
              description="Request counts and latency per route template and status, packs by ready state, rows "
              "trimmed by budget, Neo4j errors and 503s, Neo4j work in flight. Needs GRAPHSVC_METRICS_TOKEN as the "
              "bearer token when that is set, else the API token.",
              error_statuses=(401, 403), response_media_type="text/plain"),
    Operation("POST", "/mcp", "MCP streamable HTTP endpoint (JSON-RPC; the same memory tools)",
              description="Speak MCP here with an MCP client; tools: memory_bootstrap, memory_get, memory_ingest, "
              "memory_relate, memory_update, memory_tombstone, memory_list, memory_retrieve, memory_digest, "
              "memory_alias, memory_aliases, memory_session_start, memory_session_finish, memory_claim, "
              "memory_release.",
              request_schema={"type": "object"}, error_statuses=(401,), reads_body=False),
]


def _error_response(exc: ServiceError) -> JSONResponse:
    headers = {"Retry-After": str(exc.retry_after)} if isinstance(exc, Unavailable) else None
    return JSONResponse(exc.to_body(), status_code=exc.status, headers=headers)


async def _service_error(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, ServiceError)
    return _error_response(exc)


async def _http_error(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, HTTPException)
    code = {404: "not_found", 405: "method_not_allowed"}.get(exc.status_code, "http_error")
    message = {
        404: f"no route {request.method} {request.url.path}; see /openapi.json",
        405: f"{request.method} is not allowed on {request.url.path}; see /openapi.json",
    }.get(exc.status_code, str(exc.detail))
    # Keep Starlette's headers (a 405 carries `Allow`, as RFC 9110 requires).
    return JSONResponse(with_request_id({"error": {"code": code, "message": message}}), status_code=exc.status_code,
                        headers=exc.headers)


async def _unexpected(request: Request, exc: Exception) -> JSONResponse:
    log.exception("unexpected error on %s %s", request.method, request.url.path)
    # Starlette runs this outside every user middleware: the request id is added here.
    request_id = request_id_of(request.scope)
    body = {"error": {"code": "internal", "message": "unexpected server error; it was logged"}}
    if request_id:
        body["error"]["request_id"] = request_id
    return JSONResponse(body, status_code=500, headers={REQUEST_ID_HEADER: request_id} if request_id else None)


def all_operations() -> list[Operation]:
    ops = list(BASE_OPERATIONS)
    for module in ROUTE_MODULES:
        ops += module.OPERATIONS
    return ops


def create_app(
    service: GraphService,
    *,
    extra_routes: list[Any] | None = None,
    api_token: str | None = None,
    mcp_allowed_hosts: list[str] | None = None,
    metrics_token: str | None = None,
    max_inflight: int = DEFAULT_MAX_INFLIGHT,
    owns_service: bool = False,
    require_keys: bool = False,
    key_max_inflight: int | None = None,
) -> Starlette:
    """The app; with a non-empty `api_token`, every route but /healthz needs it as a Bearer token.

    `owns_service`: the app built the service for itself (`graphsvc serve`), so its shutdown closes the
    Neo4j driver; a service shared with other code (the tests) is left open.

    `metrics_token` (GRAPHSVC_METRICS_TOKEN) replaces the API token on GET /metrics only.

    Auth is on when `api_token` is set or `require_keys` (GRAPHSVC_REQUIRE_KEYS); then API keys
    (docs/keys.md) are accepted beside the token, which stays an admin key. `key_max_inflight`: one
    API key's share of this process's in-flight requests (default a quarter of `max_inflight`).

    `mcp_allowed_hosts` turns on the MCP SDK's Host/Origin check for /mcp (see McpHttpEndpoint).
    `max_inflight` bounds the requests waiting on Neo4j at once (GRAPHSVC_MAX_INFLIGHT; see shedding).
    """
    document = build_document(all_operations())
    mcp = McpHttpEndpoint(service, allowed_hosts=mcp_allowed_hosts)

    async def healthz(request: Request) -> JSONResponse:
        return JSONResponse({"status": "ok"})

    async def readyz(request: Request) -> JSONResponse:
        try:
            with within(service.request_bound):  # a probe: not in line behind the calls it reports on
                waiting_for = await call(service.waiting_for)
        except Unavailable:  # Neo4j did not answer the probe within the request's bound
            waiting_for = "neo4j"
        if waiting_for is None:
            return JSONResponse({"status": "ready", "ready": True, "neo4j": "reachable", "plans": "warm"})
        unavailable = Unavailable(f"not ready: waiting for {waiting_for} ({NOT_READY[waiting_for]}); retry shortly.")
        return JSONResponse({"ready": False, "waiting_for": waiting_for, **unavailable.to_body()},
                            status_code=unavailable.status, headers={"Retry-After": str(unavailable.retry_after)})

    async def openapi(request: Request) -> JSONResponse:
        return JSONResponse(document)

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        # In the background: uvicorn serves nothing (not even /healthz) until this start-up returns,
        # and the schema and plan work waits on Neo4j, which may hang. /readyz says what it waits for.
        service.start_in_background()
        # Watches (SPEC §13) end when the process is told to stop, not when the shutdown grace ends.
        restore_signals = chain_shutdown_signals(app.state.changes)
        try:
            async with mcp.run():  # the MCP session manager lives as long as the app
                yield
        finally:
            app.state.changes.close()
            restore_signals()
            telemetry.forget_this_process()  # multiprocess metrics: this worker's live gauges go
            await run_in_threadpool(service.stop_start_up, START_UP_STOP_WAIT)
            if owns_service:
                await run_in_threadpool(service.close)

    route_list: list[Any] = [
        Route("/healthz", healthz, methods=["GET"]),
        Route("/readyz", readyz, methods=["GET"]),
        Route("/openapi.json", openapi, methods=["GET"]),
        metrics_route(metrics_token),
    ]
    for module in ROUTE_MODULES:
        route_list += module.routes(service)
    route_list.append(mcp.route)
    route_list += extra_routes or []
    open_paths = OPEN_PATHS | ({"/metrics"} if metrics_token else set())
    # Outermost first: every answer carries X-Request-ID and is logged and counted (shed ones too);
    # then excess load is shed before anything else runs; then JSON errors, auth, each request's
    # wall-clock bound and the bookmark exchange (no route code needed for any of them).
    middleware = [
        Middleware(RequestIdMiddleware),
        Middleware(AccessLogMiddleware),
        Middleware(MetricsMiddleware),
        Middleware(LoadShedding, limit=max_inflight),
        Middleware(JsonErrorsMiddleware),
    ]
    if api_token or require_keys:
        middleware.append(Middleware(BearerTokenAuth, token=api_token or None, open_paths=frozenset(open_paths),
                                     keys=service.keys, bound=service.request_bound))
        middleware.append(Middleware(KeyShare, limit=key_max_inflight or max(1, max_inflight // 4)))
    middleware += [Middleware(RequestDeadline, seconds=service.request_bound, slots=call_slots(service)),
                   Middleware(BookmarkHeader)]
    app = Starlette(
        routes=route_list,
        middleware=middleware,
        lifespan=lifespan,
        exception_handlers={ServiceError: _service_error, HTTPException: _http_error, Exception: _unexpected},
    )
    app.state.service = service  # in-process callers (tests) can wait for its start-up
    app.state.changes = ChangeFeed(service)  # this process's watches and their one poller
    app.router.redirect_slashes = False  # an unknown path is a JSON 404, never a 307 to some other path
    return app
