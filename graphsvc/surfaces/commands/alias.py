"""`graphsvc alias`: teach, forget or list taught aliases (SPEC §10).

    graphsvc alias postgres pg psql [--project-prefix P]      teach
    graphsvc alias --forget postgres [pg] [--project-prefix P] forget (all of the term's when none named)
    graphsvc alias --list [--project-id I] [--project-prefix P] the sets a retrieve with that fence uses
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from graphsvc.errors import BadRequest


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser("alias", help="teach, forget (--forget) or list (--list) aliases used by retrieve")
    parser.add_argument("words", nargs="*", metavar="TERM [ALIAS ...]", help="the term, then its aliases")
    parser.add_argument("--project-prefix", default=None, help="the subtree the aliases hold in (default: everywhere)")
    parser.add_argument("--project-id", default=None, help="with --list: list what a retrieve fenced to it uses")
    parser.add_argument("--forget", action="store_true", help="forget the named aliases (or all of the term's)")
    parser.add_argument("--list", action="store_true", help="list the alias sets a retrieve with the fence uses")
    parser.add_argument("--idempotency-key", default=None, help="makes a retried teach/forget safe (SPEC §5)")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from graphsvc.factory import build_service
    from graphsvc.store.idempotency import IdempotencyKey

    if args.list and (args.words or args.forget):
        raise BadRequest("--list takes no term and no --forget; send the fence only", field="list")
    if not args.list and not args.words:
        raise BadRequest("name a term (and its aliases), or pass --list", field="term")
    if not args.list and args.project_id is not None:
        raise BadRequest("--project-id is for --list; aliases are taught for a --project-prefix", field="project_id")
    service = build_service()
    try:
        if args.list:
            fence = {name: value for name, value in (("project_id", args.project_id),
                                                     ("project_prefix", args.project_prefix)) if value is not None}
            answer: dict[str, Any] = service.aliases(fence)
        else:
            body: dict[str, Any] = {"term": args.words[0], "aliases": args.words[1:]}
            if args.forget:
                body["forget"] = True
            if args.project_prefix is not None:
                body["project_prefix"] = args.project_prefix
            key = IdempotencyKey.parse(args.idempotency_key, caller="", field="idempotency_key")
            answer = service.alias(body, idempotency=key)
    finally:
        service.db.close()
    print(json.dumps(answer, ensure_ascii=False, indent=2))
    return 0
