"""HTTP metrics: a middleware that counts and times every request, and the GET /metrics route.

Requests are labelled by route TEMPLATE (`/v1/capsules/{capsule_id}`), never the raw path,
so ids and hostile paths cannot blow up the label set; an unknown path is `<unmatched>`.
The route is found with the same `Route.matches` the router uses. GET /metrics is
behind the same bearer token as the rest, or — when GRAPHSVC_METRICS_TOKEN is set — behind
that token only (a scraper then needs no API token); see graphsvc.telemetry for the names.
"""

from __future__ import annotations

import time

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Match, Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from graphsvc import telemetry
from graphsvc.surfaces.http.auth import BearerTokenAuth

PATH = "/metrics"
UNMATCHED = "<unmatched>"
METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})


def route_template(scope: Scope) -> str:
    """The path template of the route this request reaches (also when only the method is wrong)."""
    app = scope.get("app")
    router = getattr(app, "router", None)
    partial = None
    for route in getattr(router, "routes", ()):
        match, _ = route.matches(scope)
        if match == Match.FULL:
            return getattr(route, "path", UNMATCHED)
        if match == Match.PARTIAL and partial is None:
            partial = getattr(route, "path", UNMATCHED)
    return partial or UNMATCHED


class MetricsMiddleware:
    def __init__(self, app: ASGIApp):
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        method = scope.get("method", "") if scope.get("method") in METHODS else "OTHER"
        route = route_template(scope)
        status = 500
        start = time.perf_counter()

        async def send_and_note(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        telemetry.HTTP_IN_FLIGHT.inc()
        try:
            await self.app(scope, receive, send_and_note)
        finally:
            telemetry.HTTP_IN_FLIGHT.dec()
            labels = {"method": method, "route": route, "status": str(status)}
            telemetry.HTTP_REQUESTS.labels(**labels).inc()
            telemetry.HTTP_LATENCY.labels(**labels).observe(time.perf_counter() - start)
            if status == 503:
                telemetry.UNAVAILABLE.labels(surface="http").inc()


async def _metrics(request: Request) -> Response:
    return Response(telemetry.render(), media_type=telemetry.CONTENT_TYPE)


def metrics_route(metrics_token: str | None) -> Route:
    """GET /metrics; with a metrics token it guards the route itself (the app's auth lets it through)."""
    if metrics_token:
        guarded = BearerTokenAuth(Route(PATH, _metrics), token=metrics_token, open_paths=frozenset())
        return Route(PATH, guarded, methods=["GET"])
    return Route(PATH, _metrics, methods=["GET"])
