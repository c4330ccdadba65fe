"""SPEC §11 routes: POST /v1/sessions (start: the session id and the project's digest) and
POST /v1/sessions/{session_id}/finish (store the handoff, close the session)."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from graphsvc.errors import InvalidInput
from graphsvc.models import SessionFinish, SessionStart
from graphsvc.service import GraphService
from graphsvc.surfaces.http.capsule_routes import _KEY_PARAM
from graphsvc.surfaces.http.common import json_body
from graphsvc.surfaces.http.idempotency import keyed_write
from graphsvc.surfaces.http.openapi import Operation

_SESSION_PARAM = {"name": "session_id", "in": "path", "required": True,
                  "schema": {"type": "string", "pattern": "^ses-[1-9][0-9]*$"},
                  "description": "the id POST /v1/sessions returned, e.g. ses-3"}


def _finish_schema() -> dict:
    schema = SessionFinish.model_json_schema()
    schema["properties"] = {k: v for k, v in schema["properties"].items() if k != "session_id"}
    schema["required"] = [name for name in schema.get("required", []) if name != "session_id"]
    return schema


OPERATIONS = [
    Operation(
        "POST", "/v1/sessions", "Start a session (memory_session_start): its id and the project's digest",
        description="Body: {agent, project_id, newest?, token_budget?}. agent names the worker (1-100 characters "
        "from A-Z a-z 0-9 . _ : @ / -). Answer (201): {session_id, digest}, the digest being memory_digest's for "
        "the project (it leads with the newest handoff a previous session left there).",
        request_model=SessionStart, parameters=(_KEY_PARAM,), success_status=201, error_statuses=(401, 403, 422, 503),
    ),
    Operation(
        "POST", "/v1/sessions/{session_id}/finish", "Finish a session and leave a handoff (memory_session_finish)",
        description="Body: {handoff, next_steps?}. Stores the handoff as a capsule of kind handoff in the session's "
        "project, superseding the live handoff the same agent left there before, and closes the session. "
        "Finishing again with the same body answers the same and writes nothing; with another body it is a 409; "
        "an unknown session is a 404. Answer: {session_id, handoff_id}. A handoff never enters a bootstrap "
        "section; memory_digest leads with it.",
        request_schema=_finish_schema(), parameters=(_SESSION_PARAM, _KEY_PARAM),
        error_statuses=(401, 403, 404, 409, 422, 503),
    ),
]


def routes(service: GraphService) -> list[Route]:
    async def start(request: Request) -> JSONResponse:
        return await keyed_write(request, service.session_start, await json_body(request), status=201)

    async def finish(request: Request) -> JSONResponse:
        body = await json_body(request)
        if not isinstance(body, dict):
            raise InvalidInput("the body must be a JSON object {handoff, next_steps?}")
        if "session_id" in body:
            raise InvalidInput("session_id belongs in the path, not the body", field="session_id")
        return await keyed_write(request, service.session_finish,
                                 {"session_id": request.path_params["session_id"], **body}, status=200)

    return [
        Route("/v1/sessions", start, methods=["POST"]),
        Route("/v1/sessions/{session_id}/finish", finish, methods=["POST"]),
    ]
