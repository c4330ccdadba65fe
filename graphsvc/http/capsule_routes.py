"""SPEC §5 routes under /v1/capsules."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from ..models import CapsuleIn, IngestBatch
from ..service import GraphService
from .common import call, json_body, ok
from .openapi import Operation

OPERATIONS = [
    Operation(
        "POST", "/v1/capsules", "Ingest one capsule or a batch (all-or-nothing)",
        description="Body: one capsule, or {\"items\": [...]} with at most 1000 capsules. "
        "A bad item rejects the whole batch with 422 naming items[i].field; nothing is written.",
        request_schema={"oneOf": [CapsuleIn.model_json_schema(ref_template="#/components/schemas/{model}"),
                                  IngestBatch.model_json_schema(ref_template="#/components/schemas/{model}")]},
        success_status=201,
    ),
]


def routes(service: GraphService) -> list[Route]:
    async def ingest(request: Request) -> JSONResponse:
        return ok(await call(service.ingest, await json_body(request)), status=201)

    return [Route("/v1/capsules", ingest, methods=["POST"])]
