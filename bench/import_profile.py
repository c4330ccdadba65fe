"""Where an import's time goes: one in-process import of an export-format file, profiled.

    NEO4J_URI=bolt://127.0.0.1:7689 NEO4J_PASSWORD=... .venv/bin/python -m bench.import_profile \\
        [--capsules 100000] [--top 25] [--out import.prof] [--neo4j-profile]

Generates the file of bench.import_stream (same shapes: ~740-byte capsules in 30 projects, tasks
joined by BLOCKS edges, decisions superseding older ones) with about `--capsules` capsules, wipes
the database, and imports the file with GraphService.import_file (what `graphsvc import` and
`POST /v1/capsules/import` run) under cProfile, with the service's query timeout. Prints the wall
time, capsules/s, the time spent in each phase (pass 1 validate, pass 2 check the store, pass 3
write: capsules, edges, maintained state, aliases) and in Neo4j (the driver waiting for answers),
then the top functions by own time. `--neo4j-profile` then runs Neo4j's PROFILE of one chunk of
each write statement on a second, emptied store (db hits and rows per operator), for the planner's
view. Never point it at data you keep: it wipes the database (bench.target).
"""

from __future__ import annotations

import argparse
import cProfile
import io
import json
import pstats
import tempfile
import time
from pathlib import Path
from typing import Any

from graphsvc.clock import system_clock
from graphsvc.service import GraphService
from graphsvc.store import transfer

from .import_stream import generate
from .target import bench_database

#: An export line of bench.import_stream's capsules is about this long.
LINE_BYTES = 740

#: (label, module file suffix, function name): the phases, read from the profile's cumulative times.
PHASES = [
    ("pass 1: validate", "transfer.py", "_validate"),
    ("pass 2: check the store", "transfer.py", "_check_store"),
    ("pass 3: write (all)", "transfer.py", "_write"),
    ("  parse + validate lines (all passes)", "transfer.py", "_capsule_of"),
    ("  JSON decode (all passes)", "transfer.py", "_record"),
    ("  rows + tokens", "transfer.py", "_row"),
    ("  maintained state (refresh)", "transfer.py", "_refresh"),
    ("  BLOCKS edges", "transfer.py", "_add_blocks"),
    ("  SUPERSEDES edges", "transfer.py", "_add_supersedes"),
    ("Neo4j transactions (write)", "db.py", "write"),
    ("Neo4j transactions (read)", "db.py", "read"),
]


def phase_times(stats: pstats.Stats) -> dict[str, float]:
    found: dict[str, float] = {}
    for (path, _line, name), (_cc, _nc, _tt, ct, _callers) in stats.stats.items():  # type: ignore[attr-defined]
        for label, suffix, function in PHASES:
            if name == function and path.endswith(suffix):
                found[label] = found.get(label, 0.0) + ct
    return {label: round(found.get(label, 0.0), 2) for label, _, _ in PHASES}


def neo4j_profile(db: Any, path: Path) -> list[dict[str, Any]]:
    """PROFILE of the first chunk's capsule write and of the maintained-state refresh of those capsules."""
    from graphsvc.store import cypher
    from graphsvc.store.db import statement_arguments

    db.wipe_all()
    source = transfer.Source.of_file(path.open("rb"))
    index = transfer._validate(source, transfer.Watch())
    order = index.ords()
    chunk = next(transfer._capsule_chunks(source, index, lambda: None))
    rows = [transfer._row(capsule, order) for _, capsule in chunk]
    ids = [capsule["id"] for _, capsule in chunk]
    dag = [capsule["id"] for _, capsule in chunk if capsule["kind"] in ("task", "epic")]
    out = []
    for name, params in (("transfer/import_capsules", {"rows": rows}),
                         ("maintain/refresh_superseded", {"ids": ids}),
                         ("maintain/refresh_readiness", {"ids": sorted(set(ids) | set(dag))}),
                         ("maintain/refresh_counted", {"ids": ids})):
        text = "PROFILE " + cypher.load(name)
        began = time.monotonic()
        with db._driver.session(database=db.database) as session:
            summary = session.run(text, statement_arguments(name, params)).consume()
        seconds = time.monotonic() - began

        def walk(plan: Any, depth: int = 0) -> list[str]:
            args = plan.get("args", {}) if isinstance(plan, dict) else {}
            lines = [f"{'  ' * depth}{plan.get('operatorType')}: rows {args.get('Rows')}, db hits {args.get('DbHits')}"]
            for child in plan.get("children", []):
                lines += walk(child, depth + 1)
            return lines

        out.append({"statement": name, "rows": len(params.get("rows", params.get("ids", []))),
                    "seconds": round(seconds, 2), "plan": walk(summary.profile or {})})
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--capsules", type=int, default=100_000, help="about this many capsules in the file")
    parser.add_argument("--top", type=int, default=25, help="functions to list by own time")
    parser.add_argument("--out", type=Path, default=None, help="also write the raw cProfile data here")
    parser.add_argument("--neo4j-profile", action="store_true", help="PROFILE the write statements afterwards")
    args = parser.parse_args(argv)
    db = bench_database(timeout=30.0)
    try:
        db.apply_schema()
        with tempfile.TemporaryDirectory(prefix="graphsvc-import-profile-") as tmp:
            path = Path(tmp) / "import.jsonl"
            counts = generate(path, args.capsules * LINE_BYTES)
            db.wipe_all()
            service = GraphService(db, clock=system_clock)
            profiler = cProfile.Profile()
            began = time.monotonic()
            with path.open("rb") as source:
                profiler.enable()
                answer = service.import_file(source)
                profiler.disable()
            seconds = time.monotonic() - began
            stats = pstats.Stats(profiler)
            if args.out:
                stats.dump_stats(str(args.out))
            summary = {"file": counts, "answer": answer, "seconds": round(seconds, 1),
                       "capsules_per_s": round(counts["capsules"] / seconds), "phases_s": phase_times(stats)}
            print(json.dumps(summary, indent=2))
            text = io.StringIO()
            pstats.Stats(profiler, stream=text).sort_stats("tottime").print_stats(args.top)
            print(text.getvalue())
            if args.neo4j_profile:
                for row in neo4j_profile(db, path):
                    print(f"{row['statement']} ({row['rows']} rows): {row['seconds']} s")
                    for line in row["plan"]:
                        print("    " + line)
    finally:
        db.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
