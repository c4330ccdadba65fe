"""What planning the pack's statements costs: a replan, or the first pack on a cold query cache.

    python -m bench.plan_time [--load] [--capsules 10000] [--rounds 3] [--statements NAME ...]

Neo4j replans a cached statement when the store's statistics drift past its threshold (a store
that is young or growing fast), and a freshly started Neo4j plans each statement once; either
way a caller waits for it. For every round and statement, in turn: `CALL db.clearQueryCaches()`,
then one `EXPLAIN` (planned, not run) with the parameters of a fenced pack with two terms, timed
on the wall clock. The first round also pays the JVM's warm-up; the median is reported.

`bench/plan_yardstick` (40 trivial WITH clauses) gives the fixed cost of a statement's clauses
on this machine, beside the real statements.

Statement names are loaded like the service loads them (graphsvc.store.cypher), so an older
tree's statements can be timed on the same store with GRAPHSVC_CYPHER_DIR=<old tree>/cypher and
their old names (e.g. `--statements bootstrap/sections`). Uses the `bench` instance unless
NEO4J_URI is set; `--load` wipes it and loads bench.dataset's store first.
"""

from __future__ import annotations

import argparse
import statistics
import time
from datetime import datetime, timezone

from graphsvc.models import BootstrapRequest
from graphsvc.store import cypher
from graphsvc.store.bootstrap import section_runs, statement_parameters, unread_head
from graphsvc.store.db import statement_arguments

from . import dataset
from .target import bench_database

PACK_STATEMENTS = ["bootstrap/head", "bootstrap/sections_fenced", "bootstrap/sections_store"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--statements", nargs="+", default=PACK_STATEMENTS)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--load", action="store_true", help="wipe the store and load --capsules first")
    parser.add_argument("--capsules", type=int, default=10_000)
    args = parser.parse_args()
    db = bench_database(timeout=600.0)
    try:
        if args.load:
            db.apply_schema()
            db.wipe_all()
            dataset.load(db, dataset.build(args.capsules))
        params = statement_parameters(BootstrapRequest(project_prefix="p05", terms=["deploy", "cache"]),
                                      datetime(2026, 12, 3, tzinfo=timezone.utc))
        seconds: dict[str, list[float]] = {name: [] for name in args.statements}
        for _ in range(args.rounds):
            for name in args.statements:
                db._driver.execute_query("CALL db.clearQueryCaches()")
                began = time.perf_counter()
                arguments = params if name == "bootstrap/head" else section_runs(params, unread_head(["p05"]))[1]
                db._driver.execute_query("EXPLAIN " + cypher.load(name), statement_arguments(name, arguments))
                seconds[name].append(time.perf_counter() - began)
        for name, taken in seconds.items():
            print(f"{name:<32} {len(cypher.load(name)):>6} chars sent  plan s: "
                  f"{' '.join(f'{s:.2f}' for s in taken)}  median {statistics.median(taken):.2f}")
    finally:
        db.close()


if __name__ == "__main__":
    main()
