"""`graphsvc` command line: one sub-command per module in `graphsvc/commands/`.

Each command module exposes `register(subparsers)` and sets `func` on its
parser; adding a command is adding a module, nothing else changes here.
"""

from __future__ import annotations

import argparse
import importlib
import pkgutil
import sys

from . import commands
from .errors import ServiceError


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="graphsvc", description="Deterministic cold-start memory packs in Neo4j.")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for info in sorted(pkgutil.iter_modules(commands.__path__), key=lambda m: m.name):
        module = importlib.import_module(f"{commands.__name__}.{info.name}")
        module.register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except ServiceError as exc:
        print(f"graphsvc: {exc.message}" + (f" (field: {exc.field})" if exc.field else ""), file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
