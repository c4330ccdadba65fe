"""`graphsvc serve`: the HTTP JSON API (and the MCP endpoint at /mcp) with uvicorn."""

from __future__ import annotations

import argparse


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser("serve", help="run the HTTP service (GRAPHSVC_HOST/GRAPHSVC_PORT)")
    parser.add_argument("--host", default=None)
    parser.add_argument("--port", type=int, default=None)
    parser.set_defaults(func=run)


#: On a loopback bind, /mcp answers only to these Host/Origin names (DNS-rebinding protection).
LOOPBACK_HOSTS = ["127.0.0.1:*", "localhost:*", "[::1]:*"]


def run(args: argparse.Namespace) -> int:
    import uvicorn

    from graphsvc.config import get_settings
    from graphsvc.factory import build_service
    from graphsvc.surfaces.http.app import create_app
    from graphsvc.surfaces.http.auth import configured_token

    settings = get_settings()
    host = args.host or settings.graphsvc_host
    app = create_app(
        build_service(settings),
        api_token=configured_token(settings.graphsvc_api_token),
        mcp_allowed_hosts=LOOPBACK_HOSTS if host in ("127.0.0.1", "localhost", "::1") else None,
        metrics_token=configured_token(settings.graphsvc_metrics_token),
    )
    uvicorn.run(
        app,
        host=host,
        port=args.port or settings.graphsvc_port,
        log_level=settings.graphsvc_log_level.lower(),
        # graphsvc.logs configured the root logger (text or JSON, request ids); uvicorn's loggers
        # propagate to it. Its access log is off: it prints query strings (tokens!) verbatim, and
        # graphsvc.surfaces.http.access_log writes a redacted line instead.
        log_config=None,
        access_log=False,
    )
    return 0
