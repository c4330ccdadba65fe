"""`graphsvc digest`: print a scope's memory_digest (SPEC §9) as JSON.

Like `graphsvc bootstrap`: pretty by default, `--compact` prints the canonical body HTTP sends, and a
stderr note ties budget.used_tokens to that body's length.
"""

from __future__ import annotations

import argparse
from typing import Any

from graphsvc.surfaces.commands.bootstrap import print_answer


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser("digest", help="print a scope at a glance (memory_digest) as JSON")
    parser.add_argument("--project-id", default=None, help="exact project fence")
    parser.add_argument("--project-prefix", default=None, help="subtree fence: 'nott' covers nott and nott/x")
    parser.add_argument("--newest", type=int, default=None, help="how many newest live capsules (0-20, default 5)")
    parser.add_argument("--token-budget", type=int, default=None, help="token budget for the whole digest (default 1500)")
    parser.add_argument("--agent", default=None,
                        help="who asks (SPEC §12): its claimed tasks first, tasks other agents claimed left out")
    parser.add_argument("--now", default=None, help="pin the clock (ISO-8601 with offset) for a reproducible digest")
    parser.add_argument("--compact", action="store_true",
                        help="print the canonical compact body (byte for byte what HTTP returns) instead of pretty JSON")
    parser.set_defaults(func=run)


def request_body(args: argparse.Namespace) -> dict[str, Any]:
    return {name: getattr(args, name) for name in ("project_id", "project_prefix", "newest", "token_budget", "agent")
            if getattr(args, name) is not None}


def run(args: argparse.Namespace) -> int:
    return print_answer(args, "digest", request_body(args))
