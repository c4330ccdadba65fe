"""The HTTP side of idempotency keys: read `Idempotency-Key`, call the write, mark a replay.

One helper for every write route, so the routes stay one line each. The key is scoped to
the caller the auth middleware identified (the SHA-256 of its bearer token; "" with auth
off). A replayed answer has the stored status and body plus `Idempotent-Replayed: true`.
"""

from __future__ import annotations

from typing import Any, Callable

from starlette.requests import Request
from starlette.responses import JSONResponse

from graphsvc.errors import BadRequest
from graphsvc.store.idempotency import IdempotencyKey
from graphsvc.surfaces.http.auth import CALLER_STATE
from graphsvc.surfaces.http.common import call

HEADER = "Idempotency-Key"
REPLAYED_HEADER = "Idempotent-Replayed"


def key_of(request: Request) -> IdempotencyKey | None:
    """The request's key (None without one); a malformed or repeated header is a teaching 400."""
    values = request.headers.getlist(HEADER)
    if len(values) > 1:
        raise BadRequest(f"{HEADER}: send it once (it appears {len(values)} times)", field=HEADER)
    caller = request.scope.get("state", {}).get(CALLER_STATE, "")
    return IdempotencyKey.parse(values[0] if values else None, caller=caller, field=HEADER)


async def keyed_write(request: Request, write: Callable[..., Any], *args: Any, status: int) -> JSONResponse:
    """Run a service write with the request's idempotency key; answer `status` (or the replayed one)."""
    key = key_of(request)
    body = await call(lambda: write(*args, idempotency=key))
    if key is not None and key.replayed:
        return JSONResponse(body, status_code=key.status or status, headers={REPLAYED_HEADER: "true"})
    return JSONResponse(body, status_code=status)
