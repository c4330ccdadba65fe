"""The access log: one line per request, written by the service instead of uvicorn.

uvicorn's access log prints the request target verbatim, query string included, so a
token sent as `?access_token=...` (refused with 401, correctly) still landed in the log.
This line keeps the path as sent (percent-encoded, so no control character can forge a
line) and only the NAMES of query parameters, every value replaced by `***`. `graphsvc
serve` turns uvicorn's own access log off. Fields: method, target, status, duration in
ms, the API key's id (`key=<id>`; the env token shows as `key=GRAPHSVC_API_TOKEN`, no auth as
`key=-`; never a secret), and the request id (on every line via the logging filter); in JSON logs they also
travel as the structured `http` object.
"""

from __future__ import annotations

import logging
import time
from urllib.parse import parse_qsl

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from graphsvc.surfaces.http.auth import principal_of

log = logging.getLogger("graphsvc.access")
MAX_TARGET = 512


def loggable_target(scope: Scope) -> str:
    """The path as sent plus the query's parameter names, with every value redacted."""
    raw = scope.get("raw_path") or scope.get("path", "").encode("utf-8", "backslashreplace")
    path = raw.decode("ascii", "backslashreplace")
    query = scope.get("query_string") or b""
    if query:
        names = [name for name, _ in parse_qsl(query.decode("latin-1"), keep_blank_values=True)]
        path += "?" + "&".join(f"{name.encode('ascii', 'backslashreplace').decode('ascii')}=***" for name in names)
    printable = "".join(ch if " " < ch < "\x7f" else f"\\x{ord(ch):02x}" for ch in path)
    return printable if len(printable) <= MAX_TARGET else printable[:MAX_TARGET] + "..."


class AccessLogMiddleware:
    def __init__(self, app: ASGIApp):
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        start = time.perf_counter()
        status = 500  # an exception escaping the app is answered 500 by Starlette's outer handler

        async def send_and_note(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        try:
            await self.app(scope, receive, send_and_note)
        finally:
            millis = (time.perf_counter() - start) * 1000
            target = loggable_target(scope)
            method = scope.get("method", "-")
            caller = principal_of(scope)
            key = "-" if caller is None else caller.key_id or caller.label
            log.info("%s %s %d %.1fms key=%s", method, target, status, millis, key,
                     extra={"http": {"method": method, "target": target, "status": status,
                                     "duration_ms": round(millis, 1), "key": key}})
