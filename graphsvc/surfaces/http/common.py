"""Helpers every handler uses: read a JSON body, run blocking service calls off the loop."""

from __future__ import annotations

import json
from typing import Any, AsyncIterator, Callable, TypeVar

from starlette.requests import Request
from starlette.responses import JSONResponse

from graphsvc.errors import BadRequest, PayloadTooLarge, UnsupportedMediaType
from graphsvc.surfaces.deadline import run_bounded

T = TypeVar("T")

#: A full ingest batch is 1000 capsules of at most 64 KiB each, plus JSON overhead.
MAX_JSON_BYTES = 80 * 1024 * 1024
#: The content types a browser may send cross-site without a CORS preflight. A page the
#: developer happens to open must not be able to tombstone or ingest through a local service.
_SIMPLE_TYPES = ("text/plain", "application/x-www-form-urlencoded", "multipart/form-data")


async def read_body(request: Request, limit: int | None = None) -> bytes:
    """The raw body, refused (415/413) before it is buffered when its type or size is wrong."""
    return b"".join([chunk async for chunk in body_chunks(request, limit)])


async def body_chunks(request: Request, limit: int | None = None) -> AsyncIterator[bytes]:
    """The body as it arrives (a large one can go to disk, not memory), refused (415/413) as soon
    as its type or size is wrong."""
    limit = MAX_JSON_BYTES if limit is None else limit
    media_type = request.headers.get("content-type", "").split(";", 1)[0].strip().lower()
    if media_type in _SIMPLE_TYPES:
        raise UnsupportedMediaType(
            f"Content-Type '{media_type}' is not accepted; send the body as JSON with "
            "'Content-Type: application/json' (e.g. curl -H 'content-type: application/json')",
            field="content-type",
        )
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > limit:
        raise PayloadTooLarge(f"the body is {declared} bytes; at most {limit} are accepted")
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise PayloadTooLarge(f"the body is larger than {limit} bytes, the most accepted")
        yield chunk


async def json_body(request: Request, *, allow_empty: bool = False) -> Any:
    """The parsed JSON body; malformed JSON is a 400 that says where it broke."""
    raw = await read_body(request)
    if not raw.strip():
        if allow_empty:
            return {}
        raise BadRequest("the request body is empty; send a JSON object")
    try:
        return json.loads(raw)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise BadRequest(f"the body is not valid JSON ({exc})") from None
    except (ValueError, RecursionError):  # integers past Python's digit limit, absurd nesting
        raise BadRequest("the body is JSON this service cannot read (a number too long or nesting too deep)") from None


async def call(fn: Callable[..., T], *args: Any) -> T:
    """The driver is synchronous: keep the event loop free while Neo4j works, and wait at most
    the request's bound (graphsvc.surfaces.deadline) before answering 503."""
    return await run_bounded(fn, *args)


def ok(data: Any, status: int = 200) -> JSONResponse:
    return JSONResponse(data, status_code=status)
