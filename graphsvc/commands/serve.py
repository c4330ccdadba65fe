"""`graphsvc serve`: the HTTP JSON API (and the MCP endpoint at /mcp) with uvicorn."""

from __future__ import annotations

import argparse


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser("serve", help="run the HTTP service (GRAPHSVC_HOST/GRAPHSVC_PORT)")
    parser.add_argument("--host", default=None)
    parser.add_argument("--port", type=int, default=None)
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    import uvicorn

    from ..config import get_settings
    from ..factory import build_service
    from ..http.app import create_app
    from ..http.auth import configured_token

    settings = get_settings()
    app = create_app(build_service(settings), api_token=configured_token(settings.graphsvc_api_token))
    uvicorn.run(
        app,
        host=args.host or settings.graphsvc_host,
        port=args.port or settings.graphsvc_port,
        log_level=settings.graphsvc_log_level.lower(),
    )
    return 0
