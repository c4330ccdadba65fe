"""API key management over HTTP (issue 27): admin-only routes under /v1/keys.

The right is checked by the service operations (graphsvc.service.operation), like every other
route's; these handlers only move JSON. The secret of a new key is in the create answer once and
nowhere else.
"""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from graphsvc.models import KeyCreate
from graphsvc.service import GraphService
from graphsvc.surfaces.http.common import call, json_body, ok
from graphsvc.surfaces.http.openapi import Operation

_KEY_ID_PARAM = {"name": "key_id", "in": "path", "required": True,
                 "schema": {"type": "string", "pattern": "^[0-9a-f]{12}$"},
                 "description": "the key's id: the 12 hex digits after gsk_"}

OPERATIONS = [
    Operation(
        "POST", "/v1/keys", "Create an API key (admin)",
        description="Body: {label, rights: read|write|admin, prefixes?: [project prefixes]} (no prefixes: the whole "
        "store). Answer (201): the key's record plus `key`, the credential gsk_<id>_<secret>, shown this once and "
        "never stored (only a salted hash is). Send it as 'Authorization: Bearer <key>'.",
        request_model=KeyCreate, success_status=201, error_statuses=(400, 401, 403, 422, 503),
    ),
    Operation(
        "GET", "/v1/keys", "List API keys (admin; never a secret)",
        description="Answer: {keys: [{id, label, rights, prefixes, created_at, revoked_at, last_used_at, revoked}]}, "
        "oldest first. last_used_at is recorded at most once a minute per key.",
        error_statuses=(401, 403, 503), reads_body=False,
    ),
    Operation(
        "POST", "/v1/keys/{key_id}/revoke", "Revoke an API key (admin; idempotent)",
        description="Every worker refuses the key within one second. The first revoked_at is kept. Unknown id: 404.",
        parameters=(_KEY_ID_PARAM,), error_statuses=(401, 403, 404, 422, 503), reads_body=False,
    ),
]


def routes(service: GraphService) -> list[Route]:
    async def create(request: Request) -> JSONResponse:
        return ok(await call(service.keys_create, await json_body(request)), status=201)

    async def list_keys(request: Request) -> JSONResponse:
        return ok(await call(service.keys_list))

    async def revoke(request: Request) -> JSONResponse:
        return ok(await call(service.keys_revoke, request.path_params["key_id"]))

    return [
        Route("/v1/keys", create, methods=["POST"]),
        Route("/v1/keys", list_keys, methods=["GET"]),
        Route("/v1/keys/{key_id}/revoke", revoke, methods=["POST"]),
    ]
