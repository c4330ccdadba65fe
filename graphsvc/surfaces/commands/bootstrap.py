"""`graphsvc bootstrap`: print the memory_bootstrap pack (SPEC §4) as JSON."""

from __future__ import annotations

import argparse
import json
from datetime import datetime
from typing import Any


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser("bootstrap", help="print the cold-start pack for a scope as JSON")
    parser.add_argument("--project-id", default=None, help="exact project fence")
    parser.add_argument("--project-prefix", default=None, help="subtree fence: 'nott' covers nott and nott/x")
    parser.add_argument("--terms", nargs="*", default=None, metavar="TERM", help="raw caller-expanded terms (re-rank only)")
    parser.add_argument("--token-budget", type=int, default=None, help="token budget for the whole pack (default 1500)")
    parser.add_argument("--now", default=None, help="pin the clock (ISO-8601 with offset) for a reproducible pack")
    parser.set_defaults(func=run)


def request_body(args: argparse.Namespace) -> dict[str, Any]:
    """Only the options given, so the service applies its own defaults and rules."""
    body: dict[str, Any] = {}
    for name in ("project_id", "project_prefix", "terms", "token_budget"):
        value = getattr(args, name)
        if value is not None:
            body[name] = value
    return body


def run(args: argparse.Namespace) -> int:
    from graphsvc.clock import fixed_clock
    from graphsvc.errors import BadRequest
    from graphsvc.factory import build_service

    service = build_service()
    if args.now is not None:
        try:
            service.clock = fixed_clock(datetime.fromisoformat(args.now.replace("Z", "+00:00")))
        except ValueError as exc:
            raise BadRequest(f"--now must be an ISO-8601 instant with a UTC offset ({exc})", field="now") from None
    try:
        print(json.dumps(service.bootstrap(request_body(args)), ensure_ascii=False, indent=2))
    finally:
        service.db.close()
    return 0
