"""`graphsvc migrate` and `graphsvc verify [--repair]`: upgrade a store, audit what the writes maintain.

migrate brings a store written by an older graphsvc to the current schema (kind labels, the
fields the pack reads instead of recomputing); `serve` runs it at start-up too. It is idempotent
and resumable: interrupted, it goes on from its last committed page. verify recomputes every
maintained field from the raw graph and checks the full-text index set, and lists any drift (exit 1
when there is some); --repair rewrites it.
"""

from __future__ import annotations

import argparse
import sys


def register(sub: argparse._SubParsersAction) -> None:
    migrate = sub.add_parser("migrate", help="upgrade the store to the current schema (idempotent, resumable)")
    migrate.add_argument("--no-progress", action="store_true", help="do not draw the progress bar")
    migrate.set_defaults(func=run_migrate)

    verify = sub.add_parser("verify", help="recompute every maintained field from scratch and report drift")
    verify.add_argument("--repair", action="store_true", help="rewrite every field that drifted")
    verify.add_argument("--no-progress", action="store_true", help="do not draw the progress bar")
    verify.set_defaults(func=run_verify)


def _bar(args: argparse.Namespace, desc: str):
    from tqdm import tqdm

    return tqdm(unit="capsule", desc=desc, file=sys.stderr, disable=args.no_progress)


def run_migrate(args: argparse.Namespace) -> int:
    from graphsvc.factory import build_service
    from graphsvc.store.migrate import migrate

    service = build_service()
    try:
        service.db.apply_schema()
        with _bar(args, "migrate") as bar:
            done = migrate(service.db, progress=bar.update)
    finally:
        service.db.close()
    if done["from"] != done["to"]:
        print(f"migrated schema v{done['from']} -> v{done['to']}: {done['capsules']} capsules", file=sys.stderr)
    else:
        print(f"schema v{done['to']}: nothing to migrate", file=sys.stderr)
    return 0


def run_verify(args: argparse.Namespace) -> int:
    from graphsvc.factory import build_service
    from graphsvc.store.migrate import verify

    service = build_service()
    try:
        service.ensure_schema()
        with _bar(args, "verify") as bar:
            drift = verify(service.db, repair=args.repair, progress=bar.update)
    finally:
        service.db.close()
    print(f"checked {drift.capsules} capsules", file=sys.stderr)
    if drift.clean:
        print("no drift: every maintained field equals its recomputation", file=sys.stderr)
        return 0
    for name, ids in sorted(drift.fields.items()):
        shown = ", ".join(ids[:5]) + (f", … ({len(ids)} in all)" if len(ids) > 5 else "")
        print(f"drift in {name}: {shown}", file=sys.stderr)
    for problem in drift.order:
        print(f"order: {problem}", file=sys.stderr)
    if drift.tallies:
        shown = ", ".join(drift.tallies[:5]) + (f", … ({len(drift.tallies)} in all)" if len(drift.tallies) > 5 else "")
        print(f"drift in tallies (section|project): {shown}", file=sys.stderr)
    for problem in drift.indexes:
        print(f"indexes: {problem}", file=sys.stderr)
    print("repaired" if args.repair else "run `graphsvc verify --repair` to fix it", file=sys.stderr)
    return 0 if args.repair else 1
