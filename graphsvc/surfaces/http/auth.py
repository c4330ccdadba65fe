"""Bearer-token auth (SPEC §6) as a pure ASGI middleware.

When a token is configured, every HTTP request except the open paths (the
process health check) must carry `Authorization: Bearer <token>`; anything else
gets a 401 JSON error with `WWW-Authenticate: Bearer`. Pure ASGI (not
BaseHTTPMiddleware) so the streamed MCP responses at /mcp pass through
untouched. The comparison is constant-time over bytes, and neither the
expected nor the presented token is ever echoed in a body or a log line.
"""

from __future__ import annotations

import hmac
import json

from pydantic import SecretStr
from starlette.types import ASGIApp, Receive, Scope, Send

from graphsvc.errors import Unauthorized
from graphsvc.store.idempotency import caller_scope

OPEN_PATHS = frozenset({"/healthz"})
#: Where an authenticated request carries its caller's scope (SHA-256 of the token, never the token).
CALLER_STATE = "graphsvc.caller"
_SCHEME = b"bearer "


def configured_token(secret: SecretStr | None) -> str | None:
    """GRAPHSVC_API_TOKEN as set in the environment; an empty value means auth is off."""
    value = secret.get_secret_value() if secret is not None else ""
    return value or None


def presented_token(scope: Scope) -> bytes | None:
    """The token after `Bearer ` in the Authorization header, or None."""
    for name, value in scope.get("headers", ()):
        if name == b"authorization":
            if value[: len(_SCHEME)].lower() == _SCHEME:
                return value[len(_SCHEME):].strip()
            return None
    return None


class BearerTokenAuth:
    def __init__(self, app: ASGIApp, token: str, open_paths: frozenset[str] = OPEN_PATHS):
        if not token:
            raise ValueError("an empty API token would let everyone in; pass None to disable auth")
        self.app = app
        self._token = token.encode("utf-8")
        self.open_paths = open_paths

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket") or scope.get("path") in self.open_paths:
            await self.app(scope, receive, send)
            return
        given = presented_token(scope)
        if given is not None and hmac.compare_digest(given, self._token):
            scope.setdefault("state", {})[CALLER_STATE] = caller_scope(given)  # idempotency keys' scope
            await self.app(scope, receive, send)
            return
        await self._reject(scope, send, missing=given is None)

    @staticmethod
    async def _reject(scope: Scope, send: Send, *, missing: bool) -> None:
        reason = (
            "this route needs 'Authorization: Bearer <token>' (the service's GRAPHSVC_API_TOKEN)"
            if missing else "the bearer token is not valid"
        )
        body = json.dumps(Unauthorized(reason).to_body()).encode("utf-8")
        if scope["type"] == "websocket":
            await send({"type": "websocket.close", "code": 1008})
            return
        await send({
            "type": "http.response.start",
            "status": 401,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode("ascii")),
                (b"www-authenticate", b'Bearer realm="graphsvc"'),
            ],
        })
        await send({"type": "http.response.body", "body": body})
