"""`graphsvc bootstrap`: print the memory_bootstrap pack (SPEC §4) as JSON.

Pretty-printed for reading by default; `--compact` prints the canonical body itself (what HTTP
sends). Either way budget.used_tokens counts the canonical body, and a note on stderr says how
long that body is, so the indentation on screen is never mistaken for what was charged.
"""

from __future__ import annotations

import argparse
import json
import sys
from datetime import datetime
from typing import Any


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser("bootstrap", help="print the cold-start pack for a scope as JSON")
    parser.add_argument("--project-id", default=None, help="exact project fence")
    parser.add_argument("--project-prefix", default=None, help="subtree fence: 'nott' covers nott and nott/x")
    parser.add_argument("--terms", nargs="*", default=None, metavar="TERM", help="raw caller-expanded terms (re-rank only)")
    parser.add_argument("--token-budget", type=int, default=None, help="token budget for the whole pack (default 1500)")
    parser.add_argument("--agent", default=None,
                        help="who asks (SPEC §12): its claimed tasks first, tasks other agents claimed left out")
    parser.add_argument("--now", default=None, help="pin the clock (ISO-8601 with offset) for a reproducible pack")
    parser.add_argument("--compact", action="store_true",
                        help="print the canonical compact body (byte for byte what HTTP returns) instead of pretty JSON")
    parser.set_defaults(func=run)


def request_body(args: argparse.Namespace) -> dict[str, Any]:
    """Only the options given, so the service applies its own defaults and rules."""
    body: dict[str, Any] = {}
    for name in ("project_id", "project_prefix", "terms", "token_budget", "agent"):
        value = getattr(args, name)
        if value is not None:
            body[name] = value
    return body


def budget_note(pack: dict[str, Any], body: str) -> str:
    """One stderr line tying used_tokens to the canonical body's length."""
    budget = pack["budget"]
    return (f"budget: used_tokens {budget['used_tokens']} = ceil({len(body)} characters of the compact body / 4); "
            f"floor_tokens {budget['floor_tokens']}, token_budget {budget['token_budget']}, "
            f"trimmed_by_budget {budget['trimmed_by_budget']}")


def pinned_clock(now: str) -> Any:
    """`--now` as the service clock (also `graphsvc retrieve`'s)."""
    from graphsvc.clock import fixed_clock
    from graphsvc.errors import BadRequest

    try:
        return fixed_clock(datetime.fromisoformat(now.replace("Z", "+00:00")))
    except (ValueError, OverflowError) as exc:  # OverflowError: year 1 with an offset east of UTC
        raise BadRequest(f"--now must be an ISO-8601 instant with a UTC offset ({exc})", field="now") from None


def print_answer(args: argparse.Namespace, operation: str, body: dict[str, Any]) -> int:
    """Run one §4-style read (`bootstrap`, `retrieve`, `digest`) at `--now` if given; print its
    answer (canonical with `--compact`, else pretty) and the budget line on stderr."""
    from graphsvc.core.canonical import canonical_json
    from graphsvc.factory import build_service

    service = build_service()
    if args.now is not None:
        service.clock = pinned_clock(args.now)
    try:
        answer = getattr(service, operation)(body)
    finally:
        service.db.close()
    compact = canonical_json(answer)
    print(compact if args.compact else json.dumps(answer, ensure_ascii=False, indent=2))
    sys.stdout.flush()
    print(budget_note(answer, compact), file=sys.stderr)
    return 0


def run(args: argparse.Namespace) -> int:
    return print_answer(args, "bootstrap", request_body(args))
