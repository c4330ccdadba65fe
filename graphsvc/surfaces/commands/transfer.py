"""`graphsvc export` and `graphsvc import`: JSON Lines of capsules and edges (SPEC §5).

export writes to a file (atomically: a temporary file renamed at the end, so a
failed export never leaves a half file behind) or to stdout. import reads a file
(or `-` for stdin), validates every line first and then writes everything in
one transaction, showing a tqdm progress bar on stderr while it writes.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path


def register(sub: argparse._SubParsersAction) -> None:
    export = sub.add_parser("export", help="write every capsule and edge as JSON Lines (ids and times exact)")
    export.add_argument("-o", "--output", default="-", help="file to write (default: stdout)")
    export.set_defaults(func=run_export)

    imp = sub.add_parser("import", help="load a JSON Lines export (all-or-nothing; refuses existing ids)")
    imp.add_argument("file", help="an export file, or '-' for stdin")
    imp.add_argument("--no-progress", action="store_true", help="do not draw the progress bar")
    imp.set_defaults(func=run_import)


def run_export(args: argparse.Namespace) -> int:
    from graphsvc.factory import build_service

    service = build_service()
    try:
        if args.output == "-":
            count = 0
            for line in service.export_lines():
                sys.stdout.write(line)
                count += 1
            sys.stdout.flush()
        else:
            target = Path(args.output)
            partial = target.with_name(target.name + ".partial")
            count = 0
            with partial.open("w", encoding="utf-8", newline="\n") as out:
                for line in service.export_lines():
                    out.write(line)
                    count += 1
            os.replace(partial, target)
            print(f"exported {count} lines to {target}", file=sys.stderr)
    finally:
        service.db.close()
    return 0


def _lines(path: str) -> list[str]:
    from graphsvc.store.transfer import split_lines

    if path == "-":
        return split_lines(sys.stdin.read())
    with open(path, encoding="utf-8") as source:
        return split_lines(source.read())


def run_import(args: argparse.Namespace) -> int:
    from tqdm import tqdm

    from graphsvc.factory import build_service

    lines = _lines(args.file)
    service = build_service()
    try:
        service.ensure_schema()
        total = sum(1 for line in lines if line.strip())
        with tqdm(total=total, unit="line", desc="import", file=sys.stderr, disable=args.no_progress) as bar:
            result = service.import_lines(lines, progress=bar)
    finally:
        service.db.close()
    print(f"imported {result['capsules']} capsules and {result['edges']} edges", file=sys.stderr)
    return 0
