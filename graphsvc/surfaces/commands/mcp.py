"""`graphsvc mcp`: the MCP tools over stdio, for agents that launch the server themselves."""

from __future__ import annotations

import argparse
import logging


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser("mcp", help="serve the MCP tools over stdio (stdout carries JSON-RPC only)")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    import anyio

    from graphsvc.errors import Unavailable
    from graphsvc.factory import build_service
    from graphsvc.surfaces.mcp import serve_stdio

    service = build_service()  # logs go to stderr; stdout is the protocol channel
    try:
        service.ensure_schema()
    except Unavailable:
        logging.getLogger(__name__).warning("Neo4j unreachable at start-up; tools answer 503-style errors until it is")
    try:
        anyio.run(serve_stdio, service)
    finally:
        service.db.close()
    return 0
