"""Neo4j CPU per operation: what each write and read costs the Neo4j JVM, in CPU milliseconds.

    .venv/bin/python -m bench.write_cpu [--capsules 10000] [--calls 40] [--rounds 5] [--profile]

On a CPU-bound machine the requests per second end where Neo4j's CPU does, and a committing
transaction pays Lucene's refresh of every full-text index it changed. This bench loads a store of
`--capsules` capsules of bench.dataset (then `graphsvc migrate`), then measures, in `--rounds`
interleaved rounds of `--calls` calls each, the Neo4j JVM's user + system CPU (/proc/<pid>/stat,
bench.mixed.cpu_seconds; the JVM behind NEO4J_URI, bench.concurrency.neo4j_pid) per call of:

  ingest_1        POST /v1/capsules with 1 capsule (kinds as bench.mixed writes them)
  ingest_25       POST /v1/capsules with 25 capsules of mixed kinds
  update_content  PATCH a capsule's content (its tokens change)
  pack_project    memory_bootstrap with terms, fenced to one project
  pack_prefix     memory_bootstrap with terms, fenced to a project prefix
  pack_store      memory_bootstrap with terms, the whole store
  retrieve        memory_retrieve with terms, the whole store

The service runs in-process (GraphService), so only Neo4j's CPU is counted; the clock tick is
10 ms, so a figure is only as good as its calls: keep calls x the op's cost well above that. The
JVM's own background work (GC, checkpoints) lands in whatever op it coincides with: read the
median over rounds, and compare two code trees by running this same command on each, interleaved,
on the same instance (`PYTHONPATH=<tree>`, this file copied into an older tree if it lacks it).
Each run starts from a wiped store with every full-text index dropped, so one tree's indexes never
linger into another's run.

`--profile`: PROFILE one whole-store term pack's statements and print their db hits, to show the
read side's cost per statement beside the CPU figures. Uses the `bench` instance unless NEO4J_URI
is set; writes bench/results/write_cpu.json.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import time
from datetime import timedelta
from pathlib import Path
from typing import Any, Callable

from graphsvc.clock import fixed_clock
from graphsvc.models import BootstrapRequest
from graphsvc.service import GraphService
from graphsvc.store import cypher
from graphsvc.store.bootstrap import pack_statements, section_runs, statement_parameters
from graphsvc.store.db import Database, statement_arguments
from graphsvc.store.migrate import migrate

from . import dataset
from .concurrency import neo4j_pid
from .mixed import capsule, cpu_seconds
from .target import bench_database

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results" / "write_cpu.json"
#: The request clock: a day after the dataset's newest capsule.
NOW = dataset.NOW + timedelta(days=1)


def fresh_store(db: Database, capsules: int) -> list[str]:
    """Wipe, drop every full-text index, apply this tree's schema, load and migrate; the dataset's words."""
    db.wipe_all()
    for record in db._driver.execute_query("SHOW FULLTEXT INDEXES YIELD name").records:
        db._driver.execute_query(f"DROP INDEX `{record['name']}` IF EXISTS")
    db.apply_schema()
    data = dataset.build(capsules)
    dataset.load(db, data)
    with db.longer_timeout(600.0):
        migrate(db)
    return data.words


def operations(service: GraphService, words: list[str], rng: random.Random) -> dict[str, Callable[[], Any]]:
    """Each measured operation as a call; writes go to a project of their own, reads use the dataset's words."""
    written: list[str] = []

    def terms() -> list[str]:
        return [" ".join(rng.sample(words, rng.choice((1, 1, 2)))) for _ in range(rng.randint(1, 4))]

    def ingest(count: int) -> Callable[[], Any]:
        def call() -> Any:
            answer = service.ingest({"items": [capsule(rng, words, "bench/write_cpu") for _ in range(count)]})
            written.extend(answer["ids"])
            return answer
        return call

    def update() -> Any:
        if not written:
            ingest(25)()
        target = written[rng.randrange(len(written))]
        return service.update(target, {"content": " ".join(rng.choice(words) for _ in range(rng.randint(10, 60)))})

    project = rng.choice(dataset.SUBPROJECTS)
    return {
        "ingest_1": ingest(1),
        "ingest_25": ingest(25),
        "update_content": update,
        "pack_project": lambda: service.bootstrap({"project_id": project, "terms": terms()}),
        "pack_prefix": lambda: service.bootstrap({"project_prefix": project.split("/")[0], "terms": terms()}),
        "pack_store": lambda: service.bootstrap({"terms": terms()}),
        "retrieve": lambda: service.retrieve({"terms": terms()}),
    }


def measure(ops: dict[str, Callable[[], Any]], pid: int, calls: int, rounds: int) -> dict[str, dict[str, float]]:
    """Per op: the median over rounds of Neo4j CPU ms and wall ms per call (ops interleaved per round)."""
    cpu: dict[str, list[float]] = {name: [] for name in ops}
    wall: dict[str, list[float]] = {name: [] for name in ops}
    for name, op in ops.items():  # plans compiled, JIT and caches warm: one unmeasured round
        for _ in range(calls):
            op()
    for _ in range(rounds):
        for name, op in ops.items():
            used, began = cpu_seconds(pid), time.perf_counter()
            for _ in range(calls):
                op()
            wall[name].append(1000 * (time.perf_counter() - began) / calls)
            cpu[name].append(1000 * (cpu_seconds(pid) - used) / calls)
    return {name: {"neo4j_cpu_ms": round(statistics.median(cpu[name]), 2),
                   "neo4j_cpu_ms_rounds": [round(v, 2) for v in cpu[name]],
                   "wall_ms": round(statistics.median(wall[name]), 2)} for name in ops}


def plan_db_hits(plan: Any) -> int:
    return plan.get("dbHits", 0) + sum(plan_db_hits(child) for child in plan.get("children", []))


def profile_pack(db: Database, terms: list[str]) -> dict[str, int]:
    """db hits of each statement of one whole-store term pack (the section statement's two runs)."""
    params = statement_parameters(BootstrapRequest(terms=terms), NOW)
    head, sections = pack_statements(None, None)
    runs = [(head, params)]
    row = db._driver.execute_query(cypher.load(head), statement_arguments(head, params)).records[0].data()
    runs += [(sections, arguments) for arguments in section_runs(params, row)]
    hits = {}
    for number, (name, arguments) in enumerate(runs):
        summary = db._driver.execute_query("PROFILE " + cypher.load(name), statement_arguments(name, arguments)).summary
        hits[f"{name}#{number}"] = plan_db_hits(summary.profile)
    return hits


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--capsules", type=int, default=10_000, help="capsules of bench.dataset to load first")
    parser.add_argument("--calls", type=int, default=40, help="calls per op per round")
    parser.add_argument("--rounds", type=int, default=5, help="interleaved rounds (the median is reported)")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--profile", action="store_true", help="also PROFILE one whole-store term pack (db hits)")
    args = parser.parse_args()

    pid = neo4j_pid()
    if pid is None:
        raise SystemExit("no local Neo4j JVM found behind NEO4J_URI (bench.concurrency.neo4j_pid)")
    db = bench_database(timeout=60.0)
    try:
        began = time.perf_counter()
        words = fresh_store(db, args.capsules)
        print(f"loaded {args.capsules:,} capsules in {time.perf_counter() - began:.0f} s", flush=True)
        service = GraphService(db, clock=fixed_clock(NOW))
        rng = random.Random(args.seed)
        result: dict[str, Any] = {"capsules": args.capsules, "calls": args.calls, "rounds": args.rounds,
                                  "ops": measure(operations(service, words, rng), pid, args.calls, args.rounds)}
        if args.profile:
            result["profile_db_hits"] = profile_pack(db, words[:3])
    finally:
        db.close()
    for name, figures in result["ops"].items():
        print(f"{name:15} neo4j cpu {figures['neo4j_cpu_ms']:8.2f} ms/call  wall {figures['wall_ms']:8.2f} ms  "
              f"rounds {figures['neo4j_cpu_ms_rounds']}")
    for name, hits in result.get("profile_db_hits", {}).items():
        print(f"PROFILE {name}: {hits:,} db hits")
    RESULTS.parent.mkdir(exist_ok=True)
    RESULTS.write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
