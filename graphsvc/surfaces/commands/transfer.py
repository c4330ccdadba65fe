"""`graphsvc export` and `graphsvc import`: JSON Lines of capsules and edges (SPEC §5).

export writes to a file (atomically: a temporary file renamed at the end, so a
failed export never leaves a half file behind) or to stdout. import reads a file
(or `-` for stdin, spooled to a temporary file) line by line in passes, never
whole (graphsvc.store.transfer): it validates every line first, then writes what
the store does not hold yet, showing a tqdm progress bar on stderr while it
writes. An interrupted import is completed by running it again.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any, BinaryIO


def register(sub: argparse._SubParsersAction) -> None:
    export = sub.add_parser("export", help="write every capsule and edge as JSON Lines (ids and times exact)")
    export.add_argument("-o", "--output", default="-", help="file to write (default: stdout)")
    export.set_defaults(func=run_export)

    imp = sub.add_parser("import", help="load a JSON Lines export (run it again to complete an interrupted one; refuses ids stored with other fields)")
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


def _spooled_stdin() -> BinaryIO:
    spool = tempfile.TemporaryFile(prefix="graphsvc-import-")
    shutil.copyfileobj(sys.stdin.buffer, spool, 1024 * 1024)
    return spool


class _Bar:
    """A tqdm bar drawn from the moment the import knows its line count (it sets `total` after
    validating the file), so a file refused by validation prints its error and nothing else."""

    def __init__(self, disable: bool):
        self.total: int | None = None
        self._disable = disable
        self._bar: Any = None

    def refresh(self) -> None:
        from tqdm import tqdm

        if self._bar is None:
            self._bar = tqdm(total=self.total, unit="line", desc="import", file=sys.stderr, disable=self._disable)

    def update(self, n: int) -> None:
        self.refresh()
        self._bar.update(n)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()


def run_import(args: argparse.Namespace) -> int:
    from graphsvc.factory import build_service

    with (_spooled_stdin() if args.file == "-" else open(args.file, "rb")) as file:
        service = build_service()
        bar = _Bar(disable=args.no_progress)
        try:
            result = service.import_file(file, progress=bar)
        finally:
            bar.close()
            service.db.close()
    present = result["already_present"]
    print(f"imported {result['capsules']} capsules and {result['edges']} edges"
          f" ({present['capsules']} capsules and {present['edges']} edges were already present)", file=sys.stderr)
    return 0
