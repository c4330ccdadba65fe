"""SPEC §4 route: POST /v1/memory_bootstrap, the cold-start pack."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from graphsvc.models import BootstrapRequest
from graphsvc.service import GraphService
from graphsvc.surfaces.http.common import call, json_body, ok
from graphsvc.surfaces.http.openapi import Operation

OPERATIONS = [
    Operation(
        "POST", "/v1/memory_bootstrap", "The deterministic cold-start pack (constraints, ready, decisions, traps, handles)",
        description="One call before an agent acts: standing constraints (never count-capped), the next action from "
        "the blocks-DAG (or an explicit nothing-ready, or ONE live cycle: fail closed), still-valid decisions, "
        "failure traps and deduplicated capsule handles, in that order, under token_budget (default 1500). "
        "Terms are raw, caller-expanded, and only re-rank. An empty body means the whole store, no terms. "
        "Same store + request + clock gives byte-identical JSON. All content is ADVISORY_NOT_AUTHORITY data.",
        request_model=BootstrapRequest,
        error_statuses=(400, 401, 503),
    ),
]


def routes(service: GraphService) -> list[Route]:
    async def bootstrap(request: Request) -> JSONResponse:
        return ok(await call(service.bootstrap, await json_body(request, allow_empty=True)))

    return [Route("/v1/memory_bootstrap", bootstrap, methods=["POST"])]
