"""SPEC §12 routes: POST /v1/memory_claim (lease ready work to an agent; claim again to renew) and
POST /v1/memory_release (end the agent's lease). docs/claims.md is the contract an agent reads."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from graphsvc.models import ClaimRequest, ReleaseRequest
from graphsvc.service import GraphService
from graphsvc.surfaces.http.capsule_routes import _KEY_PARAM
from graphsvc.surfaces.http.common import json_body
from graphsvc.surfaces.http.idempotency import keyed_write
from graphsvc.surfaces.http.openapi import Operation

OPERATIONS = [
    Operation(
        "POST", "/v1/memory_claim", "Claim ready work before starting it (memory_claim); claim again to renew",
        description="Body: {agent, project_id?, project_prefix?, terms?, task_id?, lease_s?}. Without task_id: "
        "leases the first node of the ready order your own pack (same fence, terms and agent) shows, skipping work "
        "other agents hold; the node you already hold comes first, so claiming again renews it (renewed: true) - "
        "do that while you work, before lease_until. With task_id: that task or epic, which must be in the fence, "
        "live and ready (404 unknown or outside the fence; 409 with error.details[0].reason not_ready, done, or "
        "held with holder and lease_until). lease_s: 10-86400, default 900. Answer: {claimed: {id, headline, "
        "project_id, lease_until}, renewed} or {claimed: null, reason: nothing_ready | all_held | cycle, cycle?}. "
        "N agents claiming at once get N different nodes. Marking the node done, tombstoning or superseding it "
        "ends the lease.",
        request_model=ClaimRequest, parameters=(_KEY_PARAM,), error_statuses=(401, 403, 404, 409, 422, 503),
    ),
    Operation(
        "POST", "/v1/memory_release", "End your lease on a task (memory_release)",
        description="Body: {agent, task_id}. Ends the agent's lease on the node (released: true), so another agent "
        "can claim it. Idempotent: releasing what you no longer hold answers released: false. A live lease of "
        "another agent is a 409 naming the holder and its lease_until; an unknown task is a 404. Answer: "
        "{task_id, released}.",
        request_model=ReleaseRequest, parameters=(_KEY_PARAM,), error_statuses=(401, 403, 404, 409, 422, 503),
    ),
]


def routes(service: GraphService) -> list[Route]:
    async def claim(request: Request) -> JSONResponse:
        return await keyed_write(request, service.claim, await json_body(request), status=200)

    async def release(request: Request) -> JSONResponse:
        return await keyed_write(request, service.release, await json_body(request), status=200)

    return [
        Route("/v1/memory_claim", claim, methods=["POST"]),
        Route("/v1/memory_release", release, methods=["POST"]),
    ]
