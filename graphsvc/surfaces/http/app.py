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

from graphsvc.errors import ServiceError, Unavailable
from graphsvc.surfaces.mcp import McpHttpEndpoint
from graphsvc.service import GraphService
from graphsvc.surfaces.http import bootstrap_routes, capsule_routes
from graphsvc.config import Settings
from graphsvc.surfaces.deadline import RequestDeadline
from graphsvc.surfaces.http.auth import BearerTokenAuth
from graphsvc.surfaces.http.bookmark_header import BookmarkHeader
from graphsvc.surfaces.http.shedding import LoadShedding
from graphsvc.surfaces.http.common import call
from graphsvc.surfaces.http.openapi import Operation, build_document

log = logging.getLogger(__name__)

DEFAULT_MAX_INFLIGHT = Settings.model_fields["graphsvc_max_inflight"].default

ROUTE_MODULES = [capsule_routes, bootstrap_routes]

BASE_OPERATIONS = [
    Operation("GET", "/healthz", "The process is up", public=True, error_statuses=()),
    Operation("GET", "/readyz", "Neo4j is reachable and the schema is applied", error_statuses=(401, 503)),
    Operation("GET", "/openapi.json", "This document", error_statuses=(401,)),
    Operation("POST", "/mcp", "MCP streamable HTTP endpoint (JSON-RPC; the same seven memory tools)",
              description="Speak MCP here with an MCP client; tools: memory_bootstrap, memory_get, memory_ingest, "
              "memory_relate, memory_update, memory_tombstone, memory_list.",
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
    return JSONResponse({"error": {"code": code, "message": message}}, status_code=exc.status_code,
                        headers=exc.headers)


async def _unexpected(request: Request, exc: Exception) -> JSONResponse:
    log.exception("unexpected error on %s %s", request.method, request.url.path)
    return JSONResponse({"error": {"code": "internal", "message": "unexpected server error; it was logged"}},
                        status_code=500)


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
    max_inflight: int = DEFAULT_MAX_INFLIGHT,
) -> Starlette:
    """The app; with a non-empty `api_token`, every route but /healthz needs it as a Bearer token.

    `mcp_allowed_hosts` turns on the MCP SDK's Host/Origin check for /mcp (see McpHttpEndpoint).
    `max_inflight` bounds the requests waiting on Neo4j at once (GRAPHSVC_MAX_INFLIGHT; see shedding).
    """
    document = build_document(all_operations())
    mcp = McpHttpEndpoint(service, allowed_hosts=mcp_allowed_hosts)

    async def healthz(request: Request) -> JSONResponse:
        return JSONResponse({"status": "ok"})

    async def readyz(request: Request) -> JSONResponse:
        if await call(service.ready):
            return JSONResponse({"status": "ready", "neo4j": "reachable"})
        return _error_response(Unavailable("Neo4j is not reachable; retry shortly."))

    async def openapi(request: Request) -> JSONResponse:
        return JSONResponse(document)

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        try:
            await run_in_threadpool(service.ensure_schema)
            # Planning the pack statement takes seconds per shape on a fresh Neo4j; pay it here, not
            # on the first agent's call (and again, in the background, after a reconnect:
            # Database.on_reconnect).
            await run_in_threadpool(service.warm)
        except Unavailable:
            log.warning("Neo4j unreachable at start-up; the schema will be applied when it answers")
        async with mcp.run():  # the MCP session manager lives as long as the app
            yield

    route_list: list[Any] = [
        Route("/healthz", healthz, methods=["GET"]),
        Route("/readyz", readyz, methods=["GET"]),
        Route("/openapi.json", openapi, methods=["GET"]),
    ]
    for module in ROUTE_MODULES:
        route_list += module.routes(service)
    route_list.append(mcp.route)
    route_list += extra_routes or []
    # Outermost first: shed excess before anything else runs; then auth; then each request's
    # wall-clock bound and bookmark exchange (no route code needed for either).
    middleware = [Middleware(LoadShedding, limit=max_inflight)]
    middleware += [Middleware(BearerTokenAuth, token=api_token)] if api_token else []
    middleware += [Middleware(RequestDeadline, seconds=service.request_bound), Middleware(BookmarkHeader)]
    return Starlette(
        routes=route_list,
        middleware=middleware,
        lifespan=lifespan,
        exception_handlers={ServiceError: _service_error, HTTPException: _http_error, Exception: _unexpected},
    )
