"""How long the write side's re-warm takes on a freshly started Neo4j, statement by statement.

    python -m bench.rewarm [--rounds 2]

Each round stops and starts the local `bench` Neo4j (a cold JVM, an empty query cache, as after
a crash), then runs what a re-warm runs for the writes (graphsvc.store.warmup): the clean
variant and the after-a-change variant side by side, then the claims' pack reads after a change.
It reports when each variant ended (seconds from the start of the round) and, per variant, the
statements that took longest (planning on the cold JVM, or waiting for a lock the other
variant's transaction holds). The reads' warm-up (GraphService.warm) is not part of it.
"""

from __future__ import annotations

import argparse
import os
import threading
import time
from typing import Any

from graphsvc.neo4j_local import LocalNeo4j
from graphsvc.store import warmup

from .target import bench_database


def one_round() -> dict[str, Any]:
    local = LocalNeo4j.named("bench")
    local.stop()
    local.start()
    db = bench_database(timeout=120.0)
    took: dict[str, list[tuple[str, float]]] = {}
    plain = warmup.run

    def timed(tx: Any, name: str, **params: Any) -> Any:
        began = time.perf_counter()
        try:
            return plain(tx, name, **params)
        finally:
            took.setdefault(threading.current_thread().name, []).append(
                (name, round((time.perf_counter() - began) * 1000)))

    warmup.run = timed
    ended: dict[str, float] = {}
    try:
        db.apply_schema()
        started = time.perf_counter()

        def variant(after_a_change: bool) -> None:
            warmup.warm_write_plans(db, after_a_change)
            ended[threading.current_thread().name] = round(time.perf_counter() - started, 2)

        pool = [threading.Thread(target=variant, args=(changed,), name="after a change" if changed else "clean")
                for changed in (False, True)]
        for thread in pool:
            thread.start()
        for thread in pool:
            thread.join()
        last = threading.Thread(target=warmup.warm_claim_pack_reads, args=(db,), name="claims' pack reads")
        last.start()
        last.join()
        ended[last.name] = round(time.perf_counter() - started, 2)
    finally:
        warmup.run = plain
        db.close()
    return {"ended_s": ended,
            "slowest_ms": {name: sorted(rows, key=lambda row: -row[1])[:5] for name, rows in took.items()}}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    if os.environ.get("NEO4J_URI"):
        raise SystemExit("bench.rewarm restarts the local bench instance; unset NEO4J_URI")
    for round_ in range(args.rounds):
        result = one_round()
        print(f"round {round_ + 1}: ended {result['ended_s']}", flush=True)
        for name, rows in result["slowest_ms"].items():
            print(f"    {name}: " + ", ".join(f"{statement} {ms:.0f} ms" for statement, ms in rows), flush=True)


if __name__ == "__main__":
    main()
