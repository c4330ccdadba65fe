"""`graphsvc claim` and `graphsvc release`: lease ready work to an agent, renew or end the lease (SPEC §12).

`claim` prints memory_claim's answer: the task now held (`claimed`, with `lease_until`) or why nothing
was claimed (`reason`). Run it again with the same agent to renew the lease while the work goes on.
`release` prints memory_release's answer. `--now` pins the clock, as for `graphsvc bootstrap`.
"""

from __future__ import annotations

import argparse
import json
from typing import Any


def register(sub: argparse._SubParsersAction) -> None:
    claim = sub.add_parser("claim", help="claim the next ready task for an agent (again: renew its lease)")
    claim.add_argument("--agent", required=True, help="the worker's name, e.g. billing-agent-2")
    claim.add_argument("--project-id", default=None, help="exact project fence")
    claim.add_argument("--project-prefix", default=None, help="subtree fence: 'nott' covers nott and nott/x")
    claim.add_argument("--terms", nargs="*", default=None, metavar="TERM", help="the agent's pack terms (they order the ready work)")
    claim.add_argument("--task-id", default=None, help="claim this task or epic instead of the next ready one")
    claim.add_argument("--lease-s", type=int, default=None, help="seconds the lease lasts (10-86400, default 900)")
    claim.add_argument("--now", default=None, help="pin the clock (ISO-8601 with offset)")
    claim.add_argument("--idempotency-key", default=None, help="makes a retried claim safe (SPEC §5)")
    claim.set_defaults(func=run, verb="claim")
    release = sub.add_parser("release", help="end an agent's lease on a task")
    release.add_argument("task_id", help="the claimed task, e.g. cap-12")
    release.add_argument("--agent", required=True, help="the worker that holds the lease")
    release.add_argument("--now", default=None, help="pin the clock (ISO-8601 with offset)")
    release.add_argument("--idempotency-key", default=None, help="makes a retried release safe (SPEC §5)")
    release.set_defaults(func=run, verb="release")


def request_body(args: argparse.Namespace) -> dict[str, Any]:
    """Only the options given, so the service applies its own defaults and rules."""
    names = ("agent", "project_id", "project_prefix", "terms", "task_id", "lease_s") if args.verb == "claim" \
        else ("agent", "task_id")
    return {name: getattr(args, name) for name in names if getattr(args, name) is not None}


def run(args: argparse.Namespace) -> int:
    from graphsvc.factory import build_service
    from graphsvc.store.idempotency import IdempotencyKey
    from graphsvc.surfaces.commands.bootstrap import pinned_clock

    key = IdempotencyKey.parse(args.idempotency_key, caller="", field="idempotency_key")
    service = build_service()
    if args.now is not None:
        service.clock = pinned_clock(args.now)
    try:
        write = service.claim if args.verb == "claim" else service.release
        answer = write(request_body(args), idempotency=key)
    finally:
        service.db.close()
    print(json.dumps(answer, ensure_ascii=False, indent=2))
    return 0
