"""Helpers every handler uses: read a JSON body, run blocking service calls off the loop."""

from __future__ import annotations

import json
from typing import Any, Callable, TypeVar

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse

from ..errors import BadRequest

T = TypeVar("T")


async def json_body(request: Request, *, allow_empty: bool = False) -> Any:
    """The parsed JSON body; malformed JSON is a 400 that says where it broke."""
    raw = await request.body()
    if not raw.strip():
        if allow_empty:
            return {}
        raise BadRequest("the request body is empty; send a JSON object")
    try:
        return json.loads(raw)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise BadRequest(f"the body is not valid JSON ({exc})") from None


async def call(fn: Callable[..., T], *args: Any) -> T:
    """The driver is synchronous: keep the event loop free while Neo4j works."""
    return await run_in_threadpool(fn, *args)


def ok(data: Any, status: int = 200) -> JSONResponse:
    return JSONResponse(data, status_code=status)
