"""SPEC §8-§10 routes: POST /v1/memory_retrieve (per-task recall), POST /v1/memory_digest (a scope at a
glance) and /v1/aliases (teach, forget, list).

The retrieve and digest bodies are exactly `canonical_json(answer)` in UTF-8, the text
`budget.used_tokens` counts, with its ETag (If-None-Match → 304), as for the pack (bootstrap_routes.pack_response).
"""

from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from graphsvc.models import AliasListRequest, AliasRequest, DigestRequest, RetrieveRequest
from graphsvc.service import GraphService
from graphsvc.surfaces.http.bootstrap_routes import pack_response
from graphsvc.surfaces.http.capsule_routes import _KEY_PARAM, _query
from graphsvc.surfaces.http.common import call, json_body, ok
from graphsvc.surfaces.http.idempotency import keyed_write
from graphsvc.surfaces.http.openapi import IF_NONE_MATCH, Operation


def _fence_parameters() -> tuple[dict[str, Any], ...]:
    schema = AliasListRequest.model_json_schema()
    return tuple({"name": name, "in": "query", "required": False, "schema": prop}
                 for name, prop in schema["properties"].items())


OPERATIONS = [
    Operation(
        "POST", "/v1/memory_retrieve", "Per-task recall: what the store knows about these terms (memory_retrieve)",
        description="Bootstrap answers 'what must I know before I act?'; retrieve answers 'what do we know about "
        "THIS?'. Body: terms (1-64, required; your own expansion of the task), project_id / project_prefix, kinds, "
        "limit (1-50, default 10), token_budget (default 1500). A group is one term plus the aliases taught for it in "
        "scope; a capsule matches a group when its text holds every token of the term or of one alias. Matches that "
        "are superseded, expired or archived are excluded with a reason; a term that is exactly a tombstoned capsule's "
        "id counts as excluded 'tombstoned'. outcome is exactly one of grounded (results), missing_evidence (only "
        "excluded matches: excluded counts them per reason) and abstain (no match at all). Results rank by groups "
        "covered, then your terms' tokens covered, then recency, then id; matched_terms names your terms a row "
        "covers, 'alias:<term>' when only an alias matched. token_budget covers the whole body (§4's contract; the "
        "floor is the first result). Never writes. All content is ADVISORY_NOT_AUTHORITY data.",
        request_model=RetrieveRequest, parameters=(IF_NONE_MATCH,), etag=True, error_statuses=(400, 401, 403, 503),
    ),
    Operation(
        "POST", "/v1/memory_digest", "A scope at a glance for a session start (memory_digest)",
        description="Body: project_id / project_prefix, newest (0-20, default 5), token_budget (default 1500). "
        "Sections in order: handoff (the newest live handoff in scope, when any), counts (per kind present: live, "
        "superseded, expired, tombstoned; exact), ready and ready_total (exactly memory_bootstrap's ready section "
        "for the same scope and clock, without terms), blocked (up to 10 open, live tasks/epics still blocked, most "
        "open blockers first, each with its count) and blocked_total, newest (the most recently updated live "
        "capsules), handles, budget. token_budget covers the whole body (§4's contract; the floor is the handoff "
        "and the ready head). All content is ADVISORY_NOT_AUTHORITY data.",
        request_model=DigestRequest, parameters=(IF_NONE_MATCH,), etag=True, error_statuses=(400, 401, 403, 503),
    ),
    Operation(
        "POST", "/v1/aliases", "Teach or forget a term's aliases (memory_alias)",
        description="Body: {term, aliases: [...], project_prefix?, forget?}. Teaching adds the aliases (at most 32 "
        "per term and scope); forget: true removes the listed ones, or every alias of the term when none is listed. "
        "Without project_prefix the aliases hold for every retrieve; with one, only for retrieves fenced inside that "
        "subtree. An alias works both ways and one hop only. Terms and aliases are stored folded (lowercase tokens). "
        "memory_bootstrap never uses aliases. Answer: {term, aliases, project_prefix?} as the term now stands.",
        request_model=AliasRequest, parameters=(_KEY_PARAM,), error_statuses=(401, 403, 422, 503),
    ),
    Operation(
        "GET", "/v1/aliases", "List the aliases a retrieve with this fence would use",
        description="Query parameters: project_id and/or project_prefix (none: the store-wide aliases only). Answer: "
        "{aliases: [{term, aliases, project_prefix?}]}, store-wide ones first, then by prefix and term.",
        parameters=_fence_parameters(), error_statuses=(400, 401, 403, 503),
    ),
]


def routes(service: GraphService) -> list[Route]:
    async def retrieve(request: Request) -> Response:
        return pack_response(await call(service.retrieve, await json_body(request)), request)

    async def digest(request: Request) -> Response:
        return pack_response(await call(service.digest, await json_body(request, allow_empty=True)), request)

    async def teach(request: Request) -> JSONResponse:
        return await keyed_write(request, service.alias, await json_body(request), status=200)

    async def list_aliases(request: Request) -> JSONResponse:
        return ok(await call(service.aliases, _query(request)))

    return [
        Route("/v1/memory_retrieve", retrieve, methods=["POST"]),
        Route("/v1/memory_digest", digest, methods=["POST"]),
        Route("/v1/aliases", teach, methods=["POST"]),
        Route("/v1/aliases", list_aliases, methods=["GET"]),
    ]
