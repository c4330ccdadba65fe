"""`graphsvc keys create|list|revoke`: API keys for agents (issue 27, docs/keys.md).

The CLI talks to Neo4j directly as the operator (no key needed). `create` prints the new key once,
on stdout, then its record on stderr; the secret is never stored and cannot be shown again.
"""

from __future__ import annotations

import argparse
import json
import sys


def register(sub: argparse._SubParsersAction) -> None:
    keys = sub.add_parser("keys", help="create, list and revoke API keys (scoped to project prefixes and rights)")
    verbs = keys.add_subparsers(dest="verb", required=True, metavar="VERB")
    create = verbs.add_parser("create", help="create a key and print it once")
    create.add_argument("--label", required=True, help="who holds the key, e.g. billing-agent")
    create.add_argument("--rights", required=True, choices=("read", "write", "admin"),
                        help="read; write (implies read); admin (everything, key management included)")
    create.add_argument("--prefix", action="append", dest="prefixes", metavar="PREFIX",
                        help="a project prefix the key may use, with its sub-projects (repeat for more); "
                        "none: the whole store")
    create.set_defaults(func=run_create)
    listing = verbs.add_parser("list", help="list keys as JSON lines (never a secret)")
    listing.set_defaults(func=run_list)
    revoke = verbs.add_parser("revoke", help="revoke a key: every worker refuses it within a second")
    revoke.add_argument("id", help="the key's id (the 12 hex digits after gsk_)")
    revoke.set_defaults(func=run_revoke)


def _with_service(work):  # type: ignore[no-untyped-def]
    from graphsvc.factory import build_service

    service = build_service()
    try:
        return work(service)
    finally:
        service.close()


def run_create(args: argparse.Namespace) -> int:
    body = {"label": args.label, "rights": args.rights, "prefixes": args.prefixes}
    created = _with_service(lambda service: service.keys_create(body))
    print(created.pop("key"))
    print(json.dumps(created, sort_keys=True), file=sys.stderr)
    return 0


def run_list(args: argparse.Namespace) -> int:
    for key in _with_service(lambda service: service.keys_list())["keys"]:
        print(json.dumps(key, sort_keys=True))
    return 0


def run_revoke(args: argparse.Namespace) -> int:
    print(json.dumps(_with_service(lambda service: service.keys_revoke(args.id)), sort_keys=True))
    return 0
