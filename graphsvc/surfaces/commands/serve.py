"""`graphsvc serve`: the HTTP JSON API (and the MCP endpoint at /mcp) with uvicorn, in N workers.

Workers are uvicorn's own (`uvicorn.run(..., workers=N)`): a supervisor process spawns N worker
processes that share the listening socket, restarts one that dies, and stops them all on
SIGINT/SIGTERM. Chosen over gunicorn + UvicornWorker because it is the server already in use
(no new dependency, one set of options and logs), it runs wherever uvicorn runs, and graphsvc
needs nothing gunicorn adds on top (its pre-fork hooks, graceful-timeout tuning, worker classes).
The workers are stateless: each has its own driver; ids come from the one counter in Neo4j.
"""

from __future__ import annotations

import argparse
import os

from graphsvc.surfaces.http.asgi import LOOPBACK_HOSTS

__all__ = ["LOOPBACK_HOSTS", "register", "run"]


def _positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError("must be at least 1")
    return value


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser("serve", help="run the HTTP service (GRAPHSVC_HOST/GRAPHSVC_PORT/GRAPHSVC_WORKERS)")
    parser.add_argument("--host", default=None)
    parser.add_argument("--port", type=int, default=None)
    parser.add_argument("--workers", type=_positive, default=None,
                        help="worker processes (default GRAPHSVC_WORKERS, 1); each is a full, stateless service")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    import uvicorn

    from graphsvc.config import get_settings

    # Worker processes read their settings from the environment, so the flags go there first.
    if args.host:
        os.environ["GRAPHSVC_HOST"] = args.host
    if args.port:
        os.environ["GRAPHSVC_PORT"] = str(args.port)
    get_settings.cache_clear()
    settings = get_settings()
    uvicorn.run(
        "graphsvc.surfaces.http.asgi:app_from_env",
        factory=True,
        host=settings.graphsvc_host,
        port=settings.graphsvc_port,
        workers=args.workers or settings.graphsvc_workers,
        log_level=settings.graphsvc_log_level.lower(),
        # graphsvc.logs configured the root logger (text or JSON, request ids); uvicorn's loggers
        # propagate to it. Its access log is off: it prints query strings (tokens!) verbatim, and
        # graphsvc.surfaces.http.access_log writes a redacted line instead.
        log_config=None,
        access_log=False,
    )
    return 0
