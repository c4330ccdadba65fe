"""`graphsvc retrieve`: print a memory_retrieve answer (SPEC §8) as JSON.

Like `graphsvc bootstrap`: pretty by default, `--compact` prints the canonical body HTTP sends, and a
stderr note ties budget.used_tokens to that body's length.
"""

from __future__ import annotations

import argparse
from typing import Any

from graphsvc.surfaces.commands.bootstrap import print_answer


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser("retrieve", help="print what the store knows about some terms (memory_retrieve) as JSON")
    parser.add_argument("terms", nargs="+", metavar="TERM", help="your terms (plus taught aliases are matched)")
    parser.add_argument("--project-id", default=None, help="exact project fence")
    parser.add_argument("--project-prefix", default=None, help="subtree fence: 'nott' covers nott and nott/x")
    parser.add_argument("--kinds", nargs="+", default=None, metavar="KIND", help="only these kinds")
    parser.add_argument("--limit", type=int, default=None, help="at most this many results (1-50, default 10)")
    parser.add_argument("--token-budget", type=int, default=None, help="token budget for the whole answer (default 1500)")
    parser.add_argument("--now", default=None, help="pin the clock (ISO-8601 with offset) for a reproducible answer")
    parser.add_argument("--compact", action="store_true",
                        help="print the canonical compact body (byte for byte what HTTP returns) instead of pretty JSON")
    parser.set_defaults(func=run)


def request_body(args: argparse.Namespace) -> dict[str, Any]:
    """Only the options given, so the service applies its own defaults and rules."""
    body: dict[str, Any] = {"terms": args.terms}
    for name in ("project_id", "project_prefix", "kinds", "limit", "token_budget"):
        value = getattr(args, name)
        if value is not None:
            body[name] = value
    return body


def run(args: argparse.Namespace) -> int:
    return print_answer(args, "retrieve", request_body(args))
