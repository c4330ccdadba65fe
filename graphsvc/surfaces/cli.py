"""`graphsvc` command line: one sub-command per module in `graphsvc/surfaces/commands/`.

Each command module exposes `register(subparsers)` and sets `func` on its
parser; adding a command is adding a module, nothing else changes here.
"""

from __future__ import annotations

import argparse
import importlib
import pkgutil
import os
import sys

from pydantic import ValidationError

from graphsvc.surfaces import commands
from graphsvc.config import InvalidNeo4jUri
from graphsvc.errors import ServiceError


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="graphsvc", description="Deterministic cold-start memory packs in Neo4j.")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for info in sorted(pkgutil.iter_modules(commands.__path__), key=lambda m: m.name):
        module = importlib.import_module(f"{commands.__name__}.{info.name}")
        module.register(sub)
    return parser


def _fail(message: str) -> int:
    """Expected failures are one line on stderr and exit status 2, never a traceback."""
    print(f"graphsvc: {message}", file=sys.stderr)
    return 2


def _settings_problem(exc: ValidationError) -> str:
    # Names and rules only: the rejected value could be a credential.
    problems = "; ".join(f"{'.'.join(str(part) for part in error['loc']).upper() or 'settings'}: {error['msg']}"
                         for error in exc.errors(include_url=False, include_input=False))
    return f"invalid setting: {problems}"


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except ServiceError as exc:
        return _fail(exc.message + (f" (field: {exc.field})" if exc.field else ""))
    except BrokenPipeError:
        # The reader went away (e.g. `graphsvc export | head`): nothing to report. Point stdout at
        # /dev/null so the interpreter's final flush does not raise again.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    except UnicodeDecodeError as exc:
        return _fail(f"the input is not UTF-8 text ({exc.reason} at byte {exc.start})")
    except ValidationError as exc:
        return _fail(_settings_problem(exc))
    except InvalidNeo4jUri as exc:
        return _fail(str(exc))
    except OSError as exc:
        where = f": {exc.filename}" if exc.filename else ""
        return _fail(f"{exc.strerror or exc}{where}")


if __name__ == "__main__":
    sys.exit(main())
