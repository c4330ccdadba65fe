"""The `Graphsvc-Bookmark` header: causal consistency for HTTP callers (see graphsvc.store.bookmarks).

A response to a request that wrote carries the bookmark of its last write; a request that sends
it back waits, on whichever worker and cluster member serves it, until that write is visible.
Pure ASGI and header-only: no route code and no response body changes (the pack JSON is budgeted
byte for byte and never carries it).
"""

from __future__ import annotations

import json

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from graphsvc.errors import BadRequest
from graphsvc.store import bookmarks

_REQUEST_HEADER = bookmarks.HEADER.lower().encode()


def _sent_token(scope: Scope) -> str | None:
    for name, value in scope.get("headers", ()):
        if name == _REQUEST_HEADER:
            return value.decode("latin-1")
    return None


class BookmarkHeader:
    def __init__(self, app: ASGIApp):
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        try:
            wait_for = bookmarks.from_token(_sent_token(scope), field=bookmarks.HEADER)
        except BadRequest as exc:
            await _reject(send, exc)
            return
        with bookmarks.exchange(wait_for, field=bookmarks.HEADER) as current:
            async def send_with_bookmark(message: Message) -> None:
                if message["type"] == "http.response.start" and current.written is not None:
                    headers = [*message.get("headers", ()),
                               (_REQUEST_HEADER, bookmarks.encode(current.written).encode())]
                    message = {**message, "headers": headers}
                await send(message)

            await self.app(scope, receive, send_with_bookmark)


async def _reject(send: Send, exc: BadRequest) -> None:
    body = json.dumps(exc.to_body()).encode()
    await send({"type": "http.response.start", "status": exc.status,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]})
    await send({"type": "http.response.body", "body": body})
