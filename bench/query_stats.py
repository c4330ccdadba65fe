"""Where Neo4j spends its time under a load: execution and compile time per graphsvc statement.

    python -m bench.query_stats start [--seconds 600]    # before the load (clears what was collected)
    ... run the load (bench.mixed, bench.concurrency, agents) ...
    python -m bench.query_stats report [--top 25]

Neo4j's own statistics (`db.stats.collect('QUERIES')`, Community included): for each statement
text, its invocation count and the min/avg/max of its compile and execution time. `report` maps
each text back to its `cypher/` name (as graphsvc.store.cypher loads it) and prints the statements
by their share of the total execution time, so a load's cost can be read per statement rather
than guessed from request latencies. Neo4j keeps at most 8,192 invocations' details but sums every
invocation; statements it could not finish (timed out) are not listed. Uses the `bench` instance
unless NEO4J_URI is set.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from graphsvc.store import cypher

from .target import bench_database


def statement_names() -> dict[str, str]:
    """Each statement's text as sent, to its name (`bootstrap/head`, `capsules/create`, ...)."""
    root = cypher.cypher_dir()
    names = {}
    for path in sorted(root.rglob("*.cypher")):
        name = path.relative_to(root).with_suffix("").as_posix()
        try:
            names[cypher.load(name)] = name
        except ValueError:
            continue
    return names


def summarize(rows: list[dict[str, Any]], names: dict[str, str]) -> list[dict[str, Any]]:
    """One line per statement: calls, total and mean execution ms, total compile ms, share of the execution time."""
    lines: dict[str, dict[str, Any]] = {}
    for data in rows:
        text = data.get("query", "")
        name = names.get(text) or names.get(text.removeprefix("EXPLAIN ")) or "(other) " + " ".join(text.split())[:60]
        summary = data.get("invocationSummary", {})
        calls = summary.get("invocationCount", 0)
        line = lines.setdefault(name, {"statement": name, "calls": 0, "exec_ms": 0.0, "compile_ms": 0.0})
        line["calls"] += calls
        line["exec_ms"] += calls * summary.get("executionTimeInUs", {}).get("avg", 0) / 1000
        line["compile_ms"] += sum(i.get("elapsedCompileTimeInUs", 0) for i in data.get("invocations", [])) / 1000
    total = sum(line["exec_ms"] for line in lines.values()) or 1.0
    for line in lines.values():
        line["share"] = line["exec_ms"] / total
        line["mean_ms"] = line["exec_ms"] / line["calls"] if line["calls"] else 0.0
    return sorted(lines.values(), key=lambda line: (-line["exec_ms"], line["statement"]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("action", choices=["start", "report"])
    parser.add_argument("--seconds", type=int, default=600, help="how long Neo4j collects (start)")
    parser.add_argument("--top", type=int, default=25, help="statements listed (report)")
    args = parser.parse_args()
    db = bench_database(timeout=60.0)
    try:
        driver = db._driver
        if args.action == "start":
            driver.execute_query("CALL db.stats.stop('QUERIES')")
            driver.execute_query("CALL db.stats.clear('QUERIES')")
            driver.execute_query("CALL db.stats.collect('QUERIES', {durationSeconds: $seconds})", seconds=args.seconds)
            print(f"collecting statement statistics for {args.seconds} s")
            return
        rows = [record["data"] for record in driver.execute_query("CALL db.stats.retrieve('QUERIES')").records]
        lines = summarize(rows, statement_names())
        print(f"{'statement':<36} {'calls':>7} {'exec ms':>10} {'share':>6} {'mean ms':>8} {'compile ms':>10}")
        for line in lines[:args.top]:
            print(f"{line['statement'][:36]:<36} {line['calls']:>7} {line['exec_ms']:>10.0f} {line['share']:>6.1%} "
                  f"{line['mean_ms']:>8.2f} {line['compile_ms']:>10.0f}")
    finally:
        db.close()


if __name__ == "__main__":
    main()
