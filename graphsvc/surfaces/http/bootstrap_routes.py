"""SPEC §4 route: POST /v1/memory_bootstrap, the cold-start pack.

The body is exactly `canonical_json(pack)` in UTF-8 — the text whose length `budget.used_tokens`
counts — so an agent can check the figure on the bytes it received. It carries a strong `ETag`, and
`If-None-Match` holding it is answered 304 with no body (SPEC §13, graphsvc.core.etag).
"""

from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from graphsvc.core.canonical import canonical_json
from graphsvc.core.etag import body_and_etag, none_match
from graphsvc.models import BootstrapRequest
from graphsvc.service import GraphService
from graphsvc.surfaces.http.common import call, json_body
from graphsvc.surfaces.http.openapi import IF_NONE_MATCH, Operation

OPERATIONS = [
    Operation(
        "POST", "/v1/memory_bootstrap", "The deterministic cold-start pack (constraints, ready, decisions, traps, handles)",
        description="One call before an agent acts: standing constraints (never count-capped), the next action from "
        "the blocks-DAG (or an explicit nothing-ready, or ONE live cycle: fail closed), still-valid decisions, "
        "failure traps and deduplicated capsule handles, in that order, under token_budget (default 1500). "
        "Terms are raw, caller-expanded, and only re-rank. An empty body means the whole store, no terms. "
        "token_budget covers the WHOLE response body: budget.used_tokens = ceil(characters of this exact "
        "compact JSON body / 4), envelope and budget object included. budget.floor_tokens is the cost of the "
        "envelope plus the first constraint and the next action (or the cycle / nothing-ready marker); for "
        "every token_budget >= floor_tokens, used_tokens <= token_budget, and below it only the floors are "
        "returned (the one sanctioned excess). Content rows are kept as a priority prefix; "
        "budget.trimmed_by_budget counts the rows the budget dropped; token_budget 0 returns no sections. "
        "Same store + request + clock gives byte-identical JSON. All content is ADVISORY_NOT_AUTHORITY data.",
        request_model=BootstrapRequest,
        parameters=(IF_NONE_MATCH,), etag=True,
        error_statuses=(400, 401, 403, 503),
    ),
]


def pack_response(pack: dict[str, Any], request: Request | None = None, etag: str | None = None) -> Response:
    """The pack as its canonical text, byte for byte what the budget counted, with its ETag; a 304
    with no body when the request's If-None-Match holds that ETag (RFC 9110 §13.1.2)."""
    text, etag = body_and_etag(pack) if etag is None else (None, etag)
    headers = {"ETag": etag}
    if request is not None and none_match(", ".join(request.headers.getlist("if-none-match")) or None, etag):
        return Response(status_code=304, headers=headers)
    return Response((text or canonical_json(pack)).encode("utf-8"), media_type="application/json", headers=headers)


def routes(service: GraphService) -> list[Route]:
    async def bootstrap(request: Request) -> Response:
        return pack_response(await call(service.bootstrap, await json_body(request, allow_empty=True)), request)

    return [Route("/v1/memory_bootstrap", bootstrap, methods=["POST"])]
