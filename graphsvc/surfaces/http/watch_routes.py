"""SPEC §13 routes: POST /v1/memory_bootstrap/watch and POST /v1/memory_digest/watch (long polls).

The body is the pack's request plus `etag` (the ETag header of the pack the caller holds, quotes
included) and `wait_s` (1-60, default 30). The answer is 200 with the new pack and its ETag as soon
as the pack for that request differs from `etag`, or 304 (empty body, the same ETag) once `wait_s`
has passed with no difference. The waiting is graphsvc.surfaces.watching's: no thread, no Neo4j
session, no pack computed while nothing in the fence changes. The process's one ChangeFeed is
`app.state.changes` (graphsvc.surfaces.http.app).

A watch is not counted against the in-flight limit while it waits (graphsvc.surfaces.http.shedding):
it holds nothing Neo4j could run out of; the feed caps the watches per process instead.
"""

from __future__ import annotations

import asyncio

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from graphsvc.access import principal
from graphsvc.core.canonical import canonical_json
from graphsvc.service import GraphService
from graphsvc.surfaces.http.bootstrap_routes import pack_response
from graphsvc.surfaces.http.common import json_body
from graphsvc.surfaces.http.openapi import Operation
from graphsvc.surfaces.http.shedding import WATCH_SUFFIX
from graphsvc.surfaces.watching import ChangeFeed, watch_pack
from graphsvc.watch_models import BootstrapWatchRequest, DigestWatchRequest

_WAKES = ("It wakes for whatever can change the pack: a write anywhere that touches the fence (through any worker "
          "or service instance: the signal is kept in Neo4j), a lease that starts, is renewed or ends, and the next "
          "valid_to or lease_until in the fence that the clock passes. Waiting costs no pack computation. "
          "Send etag exactly as the ETag header was received (quotes included); without etag the current pack is "
          "answered at once. wait_s: 1-60, default 30 (422 otherwise). 503 + Retry-After when the process shuts "
          "down mid-watch: send it again.")
_NOT_MODIFIED = "wait_s passed and the pack is still the one etag names: the body is empty; send the watch again"

OPERATIONS = [
    Operation(
        "POST", "/v1/memory_bootstrap/watch", "Wait until memory_bootstrap's pack for this request changes (long poll)",
        description="Body: memory_bootstrap's request plus etag and wait_s. Answers 200 with the new pack (exactly "
        "memory_bootstrap's body, with its ETag) as soon as the pack differs from etag, or 304 when wait_s passes. "
        + _WAKES,
        request_model=BootstrapWatchRequest, etag=True, not_modified=_NOT_MODIFIED,
        error_statuses=(400, 401, 403, 422, 503),
    ),
    Operation(
        "POST", "/v1/memory_digest/watch", "Wait until memory_digest's answer for this request changes (long poll)",
        description="Body: memory_digest's request plus etag and wait_s. Answers 200 with the new digest (exactly "
        "memory_digest's body, with its ETag) as soon as it differs from etag, or 304 when wait_s passes. " + _WAKES,
        request_model=DigestWatchRequest, etag=True, not_modified=_NOT_MODIFIED,
        error_statuses=(400, 401, 403, 422, 503),
    ),
]


async def _listen(request: Request, gone: asyncio.Event) -> None:
    """Set `gone` when the client disconnects (the body has been read: the next message is that)."""
    try:
        while (await request.receive())["type"] != "http.disconnect":
            pass
    except Exception:  # the connection broke in another way: the client is gone all the same
        pass
    gone.set()


def routes(service: GraphService) -> list[Route]:
    def watch(pack: str) -> Route:
        compute = {"bootstrap": service.bootstrap, "digest": service.digest}[pack]

        async def handler(request: Request) -> Response:
            feed: ChangeFeed = request.app.state.changes
            body, fields, scope = service.watch_request(pack, await json_body(request, allow_empty=True))
            # Watches of the same request by callers of the same scope share their pack computations.
            share = (canonical_json(body), principal().prefixes)
            gone = asyncio.Event()
            listener = asyncio.ensure_future(_listen(request, gone))
            try:
                outcome = await watch_pack(feed, pack, compute, body, fields.etag, fields.wait_s, scope, gone, share)
            finally:
                listener.cancel()
            if outcome.pack is None:
                return Response(status_code=304, headers={"ETag": fields.etag} if fields.etag else None)
            return pack_response(outcome.pack, etag=outcome.etag)

        return Route(f"/v1/memory_{pack}{WATCH_SUFFIX}", handler, methods=["POST"])

    return [watch("bootstrap"), watch("digest")]
