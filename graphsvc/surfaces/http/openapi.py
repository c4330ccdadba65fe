"""An OpenAPI 3.1 document built from the same route table the app mounts.

Each route module declares its operations next to its handlers; request
schemas come from the pydantic models, so the document cannot drift from the
validation that actually runs.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any, Sequence

from pydantic import BaseModel

from graphsvc import __version__

ERROR_SCHEMA = {
    "type": "object",
    "required": ["error"],
    "properties": {
        "error": {
            "type": "object",
            "required": ["code", "message"],
            "properties": {
                "code": {"type": "string"},
                "message": {"type": "string"},
                "field": {"type": "string"},
                "details": {"type": "array", "items": {"type": "object"}},
                "request_id": {"type": "string", "description": "this request's X-Request-ID (quote it to an operator)"},
            },
        }
    },
}


@dataclass(frozen=True)
class Operation:
    method: str
    path: str
    summary: str
    description: str = ""
    request_model: type[BaseModel] | None = None
    request_schema: dict[str, Any] | None = None
    parameters: Sequence[dict[str, Any]] = field(default_factory=tuple)
    success_status: int = 200
    error_statuses: Sequence[int] = (400, 401, 422, 503)
    public: bool = False
    #: The body passes through http.common.read_body / json_body, which can answer 400, 413, 415.
    reads_body: bool = True
    request_media_type: str = "application/json"
    response_media_type: str = "application/json"
    #: SPEC §13: the 200 carries an `ETag`, and a 304 (empty body, the same `ETag`) answers a pack
    #: the caller already holds: `If-None-Match` on the pack routes, `etag` + `wait_s` on a watch.
    etag: bool = False
    not_modified: str = "If-None-Match holds the current ETag: nothing changed, the body is empty"


#: The strong ETag of a §4-style answer (graphsvc.core.etag).
ETAG_HEADER = {"description": "strong ETag of the body with as_of left out (SPEC §13): two answers that differ "
               "only in their clock share it", "schema": {"type": "string"}}
IF_NONE_MATCH = {"name": "If-None-Match", "in": "header", "required": False, "schema": {"type": "string"},
                 "description": "an ETag of this route (or a list of them, or *): 304 Not Modified with an empty body "
                 "when it is the current one (RFC 9110 weak comparison)"}


#: What common.read_body / json_body answer before a handler sees the body: malformed JSON (400),
#: an oversized body (413), a browser-simple content type (415).
BODY_ERROR_STATUSES = (400, 413, 415)


def _request_schema(op: Operation) -> dict[str, Any] | None:
    if op.request_schema is not None:
        return op.request_schema
    if op.request_model is not None:
        return op.request_model.model_json_schema(ref_template="#/components/schemas/{model}", by_alias=True)
    return None


def _hoist_defs(schema: Any, components: dict[str, Any]) -> Any:
    """Move every nested `$defs` (pydantic puts them inside oneOf members too) into components.

    The refs already point at #/components/schemas/{model}, so hoisting is all it takes for
    each `$ref` in the document to resolve.
    """
    if isinstance(schema, dict):
        for name, definition in schema.pop("$defs", {}).items():
            components[name] = _hoist_defs(definition, components)
        for value in schema.values():
            _hoist_defs(value, components)
    elif isinstance(schema, list):
        for item in schema:
            _hoist_defs(item, components)
    return schema


def _error_statuses(op: Operation) -> list[int]:
    statuses = set(op.error_statuses)
    if op.reads_body and _request_schema(op) is not None:
        statuses.update(BODY_ERROR_STATUSES)
    return sorted(statuses)


def build_document(operations: Sequence[Operation]) -> dict[str, Any]:
    paths: dict[str, dict[str, Any]] = {}
    components: dict[str, Any] = {"Error": ERROR_SCHEMA}
    for op in operations:
        entry: dict[str, Any] = {
            "summary": op.summary,
            "operationId": f"{op.method.lower()}_{op.path.strip('/').replace('/', '_').replace('{', '').replace('}', '')}",
            "responses": {str(op.success_status): {"description": "OK", "content": {
                op.response_media_type: {"schema": {"type": "object" if op.response_media_type == "application/json" else "string"}}}}},
        }
        if op.description:
            entry["description"] = op.description
        if op.etag:
            entry["responses"][str(op.success_status)]["headers"] = {"ETag": ETAG_HEADER}
            entry["responses"]["304"] = {"description": op.not_modified, "headers": {"ETag": ETAG_HEADER}}
        if op.parameters:
            entry["parameters"] = list(op.parameters)
        schema = _request_schema(op)
        if schema is not None:
            schema = _hoist_defs(copy.deepcopy(schema), components)
            entry["requestBody"] = {"required": True, "content": {op.request_media_type: {"schema": schema}}}
        for status in _error_statuses(op):
            entry["responses"][str(status)] = {
                "description": "error",
                "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}},
            }
        if not op.public:
            entry["security"] = [{"bearer": []}]
        paths.setdefault(op.path, {})[op.method.lower()] = entry
    return {
        "openapi": "3.1.0",
        "info": {"title": "graphsvc", "version": __version__,
                 "description": "Deterministic cold-start memory packs for coding agents, computed in Neo4j."},
        "paths": paths,
        "components": {
            "schemas": components,
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}},
        },
    }
