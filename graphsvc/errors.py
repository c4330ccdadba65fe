"""The service's error vocabulary, shared by every surface.

Each error knows its HTTP status and renders as the SPEC §6 body
`{"error": {"code", "message", "field"?}}`, so HTTP, MCP and CLI report the
same words for the same mistake.
"""

from __future__ import annotations

from typing import Any

from graphsvc.request_context import current_request_id


class ServiceError(Exception):
    status: int = 500
    code: str = "internal"

    def __init__(self, message: str, *, field: str | None = None, details: list[dict[str, Any]] | None = None):
        super().__init__(message)
        self.message = message
        self.field = field
        self.details = details

    def to_body(self) -> dict[str, Any]:
        error: dict[str, Any] = {"code": self.code, "message": self.message}
        if self.field is not None:
            error["field"] = self.field
        if self.details:
            error["details"] = self.details
        return with_request_id({"error": error})


def with_request_id(body: dict[str, Any]) -> dict[str, Any]:
    """Stamp the current request's id into an error body, so a caller can quote it to an operator."""
    request_id = current_request_id.get()
    if request_id is not None and isinstance(body.get("error"), dict):
        body["error"]["request_id"] = request_id
    return body


class BadRequest(ServiceError):
    """The request cannot mean anything useful (e.g. a prefix that matches nothing)."""

    status = 400
    code = "bad_request"


class InvalidInput(ServiceError):
    """A well-formed request whose content breaks a rule (SPEC §5: 422, nothing written)."""

    status = 422
    code = "invalid"


class NotFound(ServiceError):
    status = 404
    code = "not_found"


class Conflict(ServiceError):
    """The request is valid but the stored state forbids it (e.g. editing a tombstoned capsule)."""

    status = 409
    code = "conflict"


class Unauthorized(ServiceError):
    status = 401
    code = "unauthorized"


class Forbidden(ServiceError):
    """The caller is known but its API key does not allow this: a right it lacks, or a project
    outside its scope (graphsvc.access). The message says what the key may do instead."""

    status = 403
    code = "forbidden"


class IdempotencyKeyReused(InvalidInput):
    """The key already names another request (SPEC §5: refused, nothing written)."""

    code = "idempotency_key_reused"


class Unavailable(ServiceError):
    """Neo4j cannot be reached in time; the caller should retry after `retry_after` seconds."""

    status = 503
    code = "neo4j_unavailable"
    retry_after = 2


class PayloadTooLarge(ServiceError):
    status = 413
    code = "payload_too_large"


class UnsupportedMediaType(ServiceError):
    """A browser-"simple" content type: refusing it keeps cross-site pages from driving the API."""

    status = 415
    code = "unsupported_media_type"
