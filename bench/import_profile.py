"""Where an import's time goes: one in-process import of an export-format file, profiled.

    NEO4J_URI=bolt://127.0.0.1:7689 NEO4J_PASSWORD=... .venv/bin/python -m bench.import_profile \\
        [--capsules 100000] [--cprofile] [--top 25] [--out import.prof] [--neo4j-profile] [--neo4j-pid PID]

Generates the file of bench.import_stream (same shapes: ~740-byte capsules in 30 projects, tasks
joined by BLOCKS edges, decisions superseding older ones) with about `--capsules` capsules, wipes
the database, and imports the file with GraphService.import_file (what `graphsvc import` and
`POST /v1/capsules/import` run). Prints the wall time, capsules/s and the CPU seconds the import
cost this process (all its threads) and, with `--neo4j-pid` (the local instance's pid file is
<home>/run/neo4j.pid), the Neo4j JVM: on a shared machine the wall time measures the neighbours,
the CPU seconds measure the import; Neo4j's are also split by the import's transaction functions
(`neo4j_by_phase`: the pass 2 look-ups, the capsule chunks, the edges, the refresh). With
`--cprofile`, the import runs under cProfile (its overhead inflates the CPU figures: compare like
with like) and the time spent in each phase is
printed (pass 1 validate, pass 2 check the store, pass 3 write: capsules, edges, maintained state;
the main thread only: pass 3 prepares rows in a helper thread) and in Neo4j (the driver waiting
for answers), then the top functions by own time. `--neo4j-profile` then runs Neo4j's PROFILE of one chunk of
each write statement on a second, emptied store (db hits and rows per operator), for the planner's
view. Never point it at data you keep: it wipes the database (bench.target). The first import
after Neo4j starts also pays for its JIT compilation and a cold page cache (several times the CPU
of the next ones): run it twice and compare the second runs.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import json
import os
import pstats
import resource
import tempfile
import time
from pathlib import Path
from typing import Any

from graphsvc.clock import system_clock
from graphsvc.service import GraphService
from graphsvc.store import maintain, transfer

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
    ("  capsule chunks (create + tallies)", "transfer.py", "_create"),
    ("  maintained state (refresh of edge targets)", "transfer.py", "_refresh"),
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
    """PROFILE of the first chunk's capsule write (and its tallies) and of the maintained-state
    refresh the import runs for that chunk's capsules that an edge of the file points at."""
    from graphsvc.store import cypher
    from graphsvc.store.db import statement_arguments

    db.wipe_all()
    source = transfer.Source.of_file(path.open("rb"))
    index = transfer._validate(source, transfer.Watch())
    order, derived = index.ords(), index.derived()
    chunk = next(transfer._capsule_chunks(source, index, lambda: None))
    rows = [transfer._row(capsule, order, derived, position) for position, (_, capsule) in enumerate(chunk)]
    tallies: dict[str, int] = {}
    for row in rows:
        for key in maintain.tallied_props(row["props"]):
            tallies[key] = tallies.get(key, 0) + 1
    superseded = [capsule["id"] for position, (_, capsule) in enumerate(chunk)
                  if derived.targets[position] & transfer._SUPERSEDES_TARGET]
    blocked = [capsule["id"] for position, (_, capsule) in enumerate(chunk)
               if derived.targets[position] & transfer._BLOCKS_TARGET]
    out = []
    for name, params in (("transfer/import_capsules", {"rows": rows}),
                         ("maintain/add_to_tallies", {"rows": [
                             {"key": key, "project_id": key.split("|", 1)[1], "section": key.split("|", 1)[0],
                              "delta": delta} for key, delta in sorted(tallies.items())]}),
                         ("maintain/refresh_superseded", {"ids": superseded}),
                         ("maintain/refresh_readiness", {"ids": sorted(set(superseded) | set(blocked))}),
                         ("maintain/refresh_counted", {"ids": sorted(set(superseded) | set(blocked))})):
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


#: (label, transfer function): the transaction functions whose Neo4j CPU `--neo4j-pid` splits out.
NEO4J_PHASES = [("pass 2: stored look-ups", "_stored"), ("pass 3: capsules + tallies", "_create"),
                ("pass 3: BLOCKS edges", "_add_blocks"), ("pass 3: SUPERSEDES edges", "_add_supersedes"),
                ("pass 3: refresh", "_refresh")]


def split_neo4j_cpu(pid: int) -> dict[str, float]:
    """Wrap the import's transaction functions so the Neo4j JVM's CPU seconds while each runs are
    summed per phase (the statements fetch every record, so their work is done when they return;
    the commits are not included)."""
    spent = {label: 0.0 for label, _ in NEO4J_PHASES}

    def timed(label: str, function: Any) -> Any:
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            before = jvm_cpu_seconds(pid)
            try:
                return function(*args, **kwargs)
            finally:
                spent[label] += jvm_cpu_seconds(pid) - before

        return wrapper

    for label, name in NEO4J_PHASES:
        if hasattr(transfer, name):  # so the bench also measures a tree without one of them
            setattr(transfer, name, timed(label, getattr(transfer, name)))
    return spent


def jvm_cpu_seconds(pid: int | None) -> float | None:
    """utime + stime of a process from /proc (None without a pid)."""
    if pid is None:
        return None
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def self_cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--capsules", type=int, default=100_000, help="about this many capsules in the file")
    parser.add_argument("--top", type=int, default=25, help="functions to list by own time")
    parser.add_argument("--out", type=Path, default=None, help="also write the raw cProfile data here")
    parser.add_argument("--neo4j-profile", action="store_true", help="PROFILE the write statements afterwards")
    parser.add_argument("--cprofile", action="store_true", help="run the import under cProfile")
    parser.add_argument("--neo4j-pid", type=int, default=None, help="the Neo4j JVM's pid, for its CPU seconds")
    args = parser.parse_args(argv)
    db = bench_database(timeout=30.0)
    try:
        db.apply_schema()
        with tempfile.TemporaryDirectory(prefix="graphsvc-import-profile-") as tmp:
            path = Path(tmp) / "import.jsonl"
            counts = generate(path, args.capsules * LINE_BYTES)
            db.wipe_all()
            service = GraphService(db, clock=system_clock)
            profiler = cProfile.Profile() if args.cprofile else None
            by_phase = split_neo4j_cpu(args.neo4j_pid) if args.neo4j_pid is not None else None
            jvm_before, cpu_before = jvm_cpu_seconds(args.neo4j_pid), self_cpu_seconds()
            began = time.monotonic()
            with path.open("rb") as source:
                if profiler is not None:
                    profiler.enable()
                answer = service.import_file(source)
                if profiler is not None:
                    profiler.disable()
            seconds = time.monotonic() - began
            cpu, jvm_after = self_cpu_seconds() - cpu_before, jvm_cpu_seconds(args.neo4j_pid)
            summary = {"file": counts, "answer": answer, "seconds": round(seconds, 1),
                       "capsules_per_s": round(counts["capsules"] / seconds),
                       "cpu_s": {"import_process": round(cpu, 1),
                                 "neo4j": None if jvm_before is None else round(jvm_after - jvm_before, 1)}}
            if by_phase is not None:
                summary["cpu_s"]["neo4j_by_phase"] = {label: round(value, 1) for label, value in by_phase.items()}
            if profiler is not None:
                stats = pstats.Stats(profiler)
                if args.out:
                    stats.dump_stats(str(args.out))
                summary["phases_s"] = phase_times(stats)
            print(json.dumps(summary, indent=2))
            if profiler is not None:
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
