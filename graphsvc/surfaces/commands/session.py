"""`graphsvc session start|finish`: open a session (prints its id and the project's digest) or finish
it with a handoff (SPEC §11)."""

from __future__ import annotations

import argparse
import json
from typing import Any


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser("session", help="start a session (id + digest) or finish it with a handoff")
    verbs = parser.add_subparsers(dest="verb", required=True, metavar="VERB")
    start = verbs.add_parser("start", help="open a session for an agent in a project; prints its id and digest")
    start.add_argument("--agent", required=True, help="the worker's name, e.g. billing-agent-2")
    start.add_argument("--project-id", required=True, help="the project the session works in")
    start.add_argument("--idempotency-key", default=None, help="makes a retried start safe (SPEC §5)")
    start.set_defaults(func=run)
    finish = verbs.add_parser("finish", help="close a session and store its handoff")
    finish.add_argument("session_id", help="the id `session start` printed, e.g. ses-3")
    finish.add_argument("--handoff", required=True, help="what the next session must know")
    finish.add_argument("--next-step", dest="next_steps", action="append", default=None,
                        help="a next step (repeat for several, in order)")
    finish.add_argument("--idempotency-key", default=None, help="makes a retried finish safe (SPEC §5)")
    finish.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from graphsvc.factory import build_service
    from graphsvc.store.idempotency import IdempotencyKey

    key = IdempotencyKey.parse(args.idempotency_key, caller="", field="idempotency_key")
    service = build_service()
    try:
        if args.verb == "start":
            answer: dict[str, Any] = service.session_start({"agent": args.agent, "project_id": args.project_id},
                                                           idempotency=key)
        else:
            body: dict[str, Any] = {"session_id": args.session_id, "handoff": args.handoff}
            if args.next_steps:
                body["next_steps"] = args.next_steps
            answer = service.session_finish(body, idempotency=key)
    finally:
        service.db.close()
    print(json.dumps(answer, ensure_ascii=False, indent=2))
    return 0
