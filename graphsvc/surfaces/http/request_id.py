"""X-Request-ID: every request gets an id, every response and error body carries it back.

A caller's X-Request-ID is kept when it is safe to echo and log (graphsvc.request_context
says what that means); otherwise, or without one, a uuid4 hex is made. The id is put in
the request's contextvar (log lines, error bodies) and `scope["state"]["request_id"]`
(handlers that run outside this middleware, e.g. the 500 handler, and the MCP tools).

Pure ASGI and outermost, so a 401 or a 404 carries the id too. The contextvar is not reset
when the request ends: each request runs in its own task (its own context copy), and the
500 handler, which Starlette runs outside every user middleware, still needs it.
"""

from __future__ import annotations

from starlette.datastructures import MutableHeaders
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from graphsvc.request_context import accepted_request_id, current_request_id

HEADER = "X-Request-ID"
STATE_KEY = "request_id"


def request_id_of(scope: Scope) -> str | None:
    return scope.get("state", {}).get(STATE_KEY)


class RequestIdMiddleware:
    def __init__(self, app: ASGIApp):
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        given = next((value for name, value in scope.get("headers", ()) if name == b"x-request-id"), None)
        request_id = accepted_request_id(given.decode("latin-1") if given is not None else None)
        scope.setdefault("state", {})[STATE_KEY] = request_id
        current_request_id.set(request_id)

        async def send_with_id(message: Message) -> None:
            if message["type"] == "http.response.start":
                MutableHeaders(scope=message)[HEADER] = request_id
            await send(message)

        await self.app(scope, receive, send_with_id)
