"""Bearer auth (SPEC §6, issue 27) as a pure ASGI middleware: API keys and GRAPHSVC_API_TOKEN.

When auth is on, every HTTP request except the open paths (the process health check) must carry
`Authorization: Bearer <credential>`: an API key `gsk_<id>_<secret>` (graphsvc.keyring checks it
against its `:ApiKey` node, cached for at most a second) or the service's GRAPHSVC_API_TOKEN (an
admin key over the whole store). Anything else gets a 401 JSON error with `WWW-Authenticate:
Bearer`. The resolved `Principal` is set in graphsvc.access.current_principal for the request (the
service checks each operation's right and applies the scope) and kept in the scope's state for the
MCP tool calls, the access log and the per-key in-flight share. Pure ASGI (not
BaseHTTPMiddleware) so the streamed MCP responses at /mcp pass through untouched. Comparisons are
constant-time, and no credential is ever echoed in a body or a log line.
"""

from __future__ import annotations

import hmac
import json

from pydantic import SecretStr
from starlette.types import ASGIApp, Receive, Scope, Send

from graphsvc.access import Forbidden, Principal, current_principal
from graphsvc.errors import ServiceError, Unauthorized, Unavailable
from graphsvc.keyring import KeyRing
from graphsvc.surfaces.deadline import run_bounded, within
from graphsvc.surfaces.http import shedding

OPEN_PATHS = frozenset({"/healthz"})
#: Where an authenticated request carries its caller's idempotency scope (a key id, or the SHA-256
#: of the env token, never a secret) ...
CALLER_STATE = "graphsvc.caller"
#: ... and its Principal (graphsvc.access).
PRINCIPAL_STATE = shedding.PRINCIPAL_STATE
#: Routes that are not service operations but need the admin right (the rest need any valid key).
ADMIN_PATHS = frozenset({"/metrics"})
_SCHEME = b"bearer "


def configured_token(secret: SecretStr | None) -> str | None:
    """GRAPHSVC_API_TOKEN as set in the environment; an empty value means auth is off."""
    value = secret.get_secret_value() if secret is not None else ""
    return value or None


MISSING = ("this route needs 'Authorization: Bearer <credential>': an API key (gsk_...) or the service's "
           "GRAPHSVC_API_TOKEN")


def presented_token(scope: Scope) -> bytes | None:
    """The token after `Bearer ` in the Authorization header, or None."""
    for name, value in scope.get("headers", ()):
        if name == b"authorization":
            if value[: len(_SCHEME)].lower() == _SCHEME:
                return value[len(_SCHEME):].strip()
            return None
    return None


def principal_of(scope: Scope) -> Principal | None:
    """The principal the auth middleware resolved for this request (None with auth off)."""
    return scope.get("state", {}).get(PRINCIPAL_STATE)


class BearerTokenAuth:
    """`token`: GRAPHSVC_API_TOKEN (None: API keys only). `keys`: the service's key ring; without
    one only the token is accepted. `bound`: seconds a key lookup may wait for Neo4j."""

    def __init__(self, app: ASGIApp, token: str | None, open_paths: frozenset[str] = OPEN_PATHS,
                 keys: KeyRing | None = None, bound: float = 7.0):
        if not token and keys is None:
            raise ValueError("an empty API token would let everyone in; pass None to disable auth")
        self.app = app
        self._token = token.encode("utf-8") if token else None
        self.open_paths = open_paths
        self.keys = keys
        self.bound = bound

    async def _resolve(self, given: bytes) -> Principal:
        if self.keys is None:
            if self._token is not None and hmac.compare_digest(given, self._token):
                return KeyRing._env_principal(given)
            raise Unauthorized("the bearer token is not valid")
        known = self.keys.cached(given, self._token)
        if known is not None:
            return known
        with within(self.bound):
            return await run_bounded(self.keys.authenticate, given, self._token)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket") or scope.get("path") in self.open_paths:
            await self.app(scope, receive, send)
            return
        given = presented_token(scope)
        if given is None:
            await self._reject(scope, send, Unauthorized(MISSING))
            return
        try:
            principal = await self._resolve(given)
            if scope.get("path") in ADMIN_PATHS:
                principal.require("admin", f"{scope.get('method', 'GET')} {scope.get('path')}")
        except (Unauthorized, Forbidden, Unavailable) as refusal:
            await self._reject(scope, send, refusal)
            return
        state = scope.setdefault("state", {})
        state[CALLER_STATE] = principal.caller  # idempotency keys' scope
        state[PRINCIPAL_STATE] = principal
        reset = current_principal.set(principal)
        try:
            await self.app(scope, receive, send)
        finally:
            current_principal.reset(reset)

    @staticmethod
    async def _reject(scope: Scope, send: Send, refusal: ServiceError) -> None:
        body = json.dumps(refusal.to_body()).encode("utf-8")
        if scope["type"] == "websocket":
            await send({"type": "websocket.close", "code": 1008})
            return
        headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode("ascii"))]
        if isinstance(refusal, Unauthorized):
            headers.append((b"www-authenticate", b'Bearer realm="graphsvc"'))
        if isinstance(refusal, Unavailable):
            headers.append((b"retry-after", str(refusal.retry_after).encode("ascii")))
        await send({"type": "http.response.start", "status": refusal.status, "headers": headers})
        await send({"type": "http.response.body", "body": body})
