"""Every error answer is the JSON body SPEC §6 promises, even when a library wrote it.

The service's own errors are JSON already; the MCP SDK answers a few transport errors in
plain text (e.g. its 4 MiB body limit: 413 "Request body too large"). This pure ASGI
middleware rewrites an error response (status >= 400) whose content type is not JSON into
`{"error": {"code", "message", "request_id"}}`, keeping the status and the other headers.
JSON answers (including the SDK's JSON-RPC errors) and every success pass untouched, and
nothing is buffered for them.
"""

from __future__ import annotations

import json

from starlette.datastructures import MutableHeaders
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from graphsvc.errors import with_request_id

CODES = {400: "bad_request", 401: "unauthorized", 403: "forbidden", 404: "not_found", 405: "method_not_allowed",
         406: "not_acceptable", 409: "conflict", 413: "payload_too_large", 415: "unsupported_media_type",
         421: "misdirected_request", 422: "invalid", 503: "unavailable"}
MAX_MESSAGE = 300


class JsonErrorsMiddleware:
    def __init__(self, app: ASGIApp):
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope.get("method") == "HEAD":  # a HEAD answer has no body to fix
            await self.app(scope, receive, send)
            return
        held: Message | None = None
        text = bytearray()

        async def rewrite(message: Message) -> None:
            nonlocal held
            if message["type"] == "http.response.start":
                content_type = MutableHeaders(scope=message).get("content-type", "")
                if message["status"] >= 400 and not content_type.startswith("application/json"):
                    held = message  # keep it until the body is complete
                    return
                await send(message)
                return
            if held is None or message["type"] != "http.response.body":
                await send(message)
                return
            text.extend(message.get("body", b"")[: MAX_MESSAGE * 4])
            if message.get("more_body", False):
                return
            status = held["status"]
            detail = text.decode("utf-8", "replace").strip()[:MAX_MESSAGE] or f"HTTP {status}"
            body = json.dumps(with_request_id({"error": {"code": CODES.get(status, "http_error"),
                                                         "message": detail}})).encode("utf-8")
            headers = MutableHeaders(scope=held)
            headers["content-type"] = "application/json"
            headers["content-length"] = str(len(body))
            await send(held)
            await send({"type": "http.response.body", "body": body})

        await self.app(scope, receive, rewrite)
