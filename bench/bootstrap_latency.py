"""memory_bootstrap latency over HTTP at 1k, 10k and 100k capsules (p50 / p95).

    python -m bench.bootstrap_latency [--sizes 1000 10000 100000 1000000] [--requests 200] [--reuse]

Needs a Neo4j it may WIPE (NEO4J_URI / NEO4J_USER / NEO4J_PASSWORD; never point it at data
you keep). For each size it loads the synthetic store of `bench.dataset` (bench-only UNWIND
loader, batches of 1000), serves the real app with uvicorn on 127.0.0.1 in a thread, and
times sequential POST /v1/memory_bootstrap calls from an httpx client (keep-alive), after a
warm-up, for each scenario below. The clock is pinned to the dataset's instant.

Scenarios (the 100k store holds a 10k-task blocks DAG in p00/dag whose edges point both
ways in id order, and a 20 x 50 layered DAG with 20 * 2^49 paths in p01/layers):
  project          project_prefix p05: a typical project (~5% of the store), no terms
  project+terms    the same with 3 terms
  dag              project_prefix p00: the project holding the 10k-task DAG
  dag+terms        the same with 3 terms
  layered          project_prefix p01: the project holding the many-path layered DAG
  store            no fence: the whole store
  store+terms      the whole store with 3 terms

Then, with CLAIMERS agents each holding a claim on p00's ready work (SPEC §12; released again
at the end, so a reused store keeps no lease):
  dag+leases       project_prefix p00, no agent: every claimed task is held by others
  dag+agent        the same as one of the claiming agents: its claim first, the others' left out
These two are timed on the same store in interleaved rounds (ROUNDS blocks each, alternating which
goes first), so a shared machine's drift hits both alike, and `agent_ratio` reports dag+agent over
dag+leases (p50, p95, mean): the issue's bar is a pack with `agent` within 10 % of one without.
`dag` (before any lease) shows what the leases themselves cost.

At 1M capsules the DAG project p00 holds 100,000 tasks (the "100k open tasks" scope). Each
scenario also records `rows_shipped`: the section rows the pack's statement sent from Neo4j.

Writes bench/results/bootstrap_latency.json and bench/bootstrap_latency.png (matplotlib,
the optional `bench` extra).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import statistics
import time
from pathlib import Path
from typing import Any

import httpx

from graphsvc.clock import fixed_clock
from graphsvc.models import BootstrapRequest
from graphsvc.store.bootstrap import read_inputs
from graphsvc.store.migrate import migrate
from graphsvc.store.db import Database
from graphsvc.surfaces.http.app import create_app
from graphsvc.service import GraphService

from tests.integration.live_server import LiveServer

from . import dataset
from .target import bench_database

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results" / "bootstrap_latency.json"
PLOT = HERE / "bootstrap_latency.png"
TARGET_P50_MS, TARGET_P95_MS = 15.0, 40.0
TERMS = ["<word 17>", "<word 911>", "<word 1703>"]  # replaced by those words of the dataset's vocabulary

SCENARIOS: dict[str, dict[str, Any]] = {
    "project": {"project_prefix": "p05"},
    "project+terms": {"project_prefix": "p05", "terms": TERMS},
    "dag": {"project_prefix": "p00"},
    "dag+terms": {"project_prefix": "p00", "terms": TERMS},
    "layered": {"project_prefix": "p01"},
    "store": {},
    "store+terms": {"terms": TERMS},
}


#: Agents holding a claim on p00's ready work during the lease scenarios.
CLAIMERS = 16
LEASE_SCENARIOS: dict[str, dict[str, Any]] = {
    "dag+leases": {"project_prefix": "p00"},
    "dag+agent": {"project_prefix": "p00", "agent": "bench-agent-0"},
}


def percentile(samples: list[float], fraction: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(round(fraction * (len(ordered) - 1))))]


#: Blocks per scenario when two scenarios are timed interleaved.
ROUNDS = 10


def summary(body: dict[str, Any], first: httpx.Response, samples: list[float]) -> dict[str, Any]:
    pack = first.json()
    return {
        "request": body,
        "p50_ms": round(statistics.median(samples), 2),
        "p95_ms": round(percentile(samples, 0.95), 2),
        "mean_ms": round(statistics.fmean(samples), 2),
        "max_ms": round(max(samples), 2),
        "requests": len(samples),
        "ready_state": pack["ready"]["state"],
        "totals": {k: pack[k] for k in ("constraints_total", "ready_total", "decisions_total", "traps_total")},
        "body_bytes": len(first.content),
    }


def time_interleaved(client: httpx.Client, bodies: dict[str, dict[str, Any]], requests: int,
                     warmup: int) -> dict[str, dict[str, Any]]:
    """Each body timed `requests` times (at least ROUNDS), in ROUNDS blocks per body, the bodies
    taking turns block by block (their order alternating), after each one's warm-up."""
    firsts: dict[str, httpx.Response] = {}
    for name, body in bodies.items():
        firsts[name] = client.post("/v1/memory_bootstrap", json=body)
        firsts[name].raise_for_status()
        for _ in range(warmup):
            client.post("/v1/memory_bootstrap", json=body)
    samples: dict[str, list[float]] = {name: [] for name in bodies}
    per_block = max(1, requests // ROUNDS)
    names = list(bodies)
    for round_ in range(ROUNDS):
        for name in (names if round_ % 2 == 0 else names[::-1]):
            for _ in range(per_block):
                began = time.perf_counter()
                response = client.post("/v1/memory_bootstrap", json=bodies[name])
                samples[name].append((time.perf_counter() - began) * 1000)
                assert response.status_code == 200 and response.content == firsts[name].content, "pack changed"
    return {name: summary(bodies[name], firsts[name], samples[name]) for name in bodies}


def time_scenario(client: httpx.Client, body: dict[str, Any], requests: int, warmup: int,
                  max_seconds: float) -> dict[str, Any]:
    """`requests` timed calls after `warmup`, or fewer (at least 50) if they take over `max_seconds`."""
    first = client.post("/v1/memory_bootstrap", json=body)
    first.raise_for_status()
    for _ in range(warmup):
        client.post("/v1/memory_bootstrap", json=body)
    samples: list[float] = []
    deadline = time.perf_counter() + max_seconds
    while len(samples) < requests and (len(samples) < 50 or time.perf_counter() < deadline):
        began = time.perf_counter()
        response = client.post("/v1/memory_bootstrap", json=body)
        samples.append((time.perf_counter() - began) * 1000)
        assert response.status_code == 200 and response.content == first.content, "pack changed between calls"
    return summary(body, first, samples)


def rows_shipped(db: Database, body: dict[str, Any]) -> int:
    """Rows one pack's statement sends from Neo4j: section rows plus live edges when a cycle is searched."""
    inputs = read_inputs(db, BootstrapRequest(**body), dataset.NOW)
    return len(inputs.constraints) + len(inputs.ready) + len(inputs.decisions) + len(inputs.traps)


def reusable(db: Database, size: int) -> dict[str, Any] | None:
    """The store's counts if it holds this bench's dataset of `size` (as its loader left the id
    counter), else None. A store changed since by anything but packs would be trusted wrongly."""
    loaded = db.query("bench/loaded")[0]
    return dict(loaded) if loaded["counter"] == loaded["capsules"] == size else None


def run_size(db: Database, size: int, requests: int, warmup: int, max_seconds: float,
             reuse: bool = False) -> dict[str, Any]:
    kept = reusable(db, size) if reuse else None
    began = time.perf_counter()
    if kept is None:
        db.wipe_all()
        data = dataset.build(size)
        dataset.load(db, data)
        counts = {"capsules": len(data.capsules), "blocks_edges": len(data.blocks)}
    else:
        counts = {"capsules": kept["capsules"], "blocks_edges": kept["blocks_edges"], "reused": True}
    load_seconds = time.perf_counter() - began
    # The vocabulary is the first thing a dataset draws from its seed: no need to build it all again.
    words = dataset.vocabulary(random.Random(dataset.SEED))
    # The bench loader writes capsules as schema v1 did (no labels, nothing maintained): the
    # migration brings the store to the current schema, and is timed as such.
    began = time.perf_counter()
    migrate(db)
    migrate_seconds = time.perf_counter() - began
    service = GraphService(db, clock=fixed_clock(dataset.NOW))
    result: dict[str, Any] = {**counts, "load_seconds": round(load_seconds, 1),
                              "migrate_seconds": round(migrate_seconds, 1), "scenarios": {}}
    print(f"{size:>7} {'reused' if kept else 'loaded'} in {load_seconds:.1f} s, migrated in {migrate_seconds:.1f} s",
          flush=True)
    terms = [words[17], words[911], words[1703]]
    with LiveServer(create_app(service)) as live, httpx.Client(base_url=live.url, timeout=60) as client:
        for name, body in SCENARIOS.items():
            body = {**body, "terms": terms} if "terms" in body else body
            result["scenarios"][name] = stats = time_scenario(client, body, requests, warmup, max_seconds)
            stats["rows_shipped"] = rows_shipped(db, body)
            print(f"{size:>7} {name:<14} p50 {stats['p50_ms']:7.2f} ms  p95 {stats['p95_ms']:7.2f} ms  "
                  f"({stats['ready_state']}, {stats['body_bytes']} B, {stats['rows_shipped']} rows shipped)",
                  flush=True)
        claimed = [service.claim({"agent": f"bench-agent-{n}", "project_prefix": "p00"})["claimed"]
                   for n in range(CLAIMERS)]
        try:
            timed = time_interleaved(client, LEASE_SCENARIOS, requests, warmup)
            for name, stats in timed.items():
                result["scenarios"][name] = stats
                print(f"{size:>7} {name:<14} p50 {stats['p50_ms']:7.2f} ms  p95 {stats['p95_ms']:7.2f} ms  "
                      f"({stats['ready_state']}, {stats['body_bytes']} B)", flush=True)
            with_agent, without = timed["dag+agent"], timed["dag+leases"]
            result["agent_ratio"] = ratio = {key: round(with_agent[key] / without[key], 3)
                                             for key in ("p50_ms", "p95_ms", "mean_ms")}
            print(f"{size:>7} dag+agent / dag+leases (same store, interleaved): p50 x{ratio['p50_ms']}  "
                  f"p95 x{ratio['p95_ms']}  mean x{ratio['mean_ms']}", flush=True)
        finally:
            for n, task in enumerate(claimed):
                if task is not None:
                    service.release({"agent": f"bench-agent-{n}", "task_id": task["id"]})
    return result


def plot(results: dict[str, Any]) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    sizes = [entry["capsules"] for entry in results["runs"]]
    fig, axes = plt.subplots(1, 2, figsize=(12, 4.5), sharey=True)
    for axis, key, target in ((axes[0], "p50_ms", TARGET_P50_MS), (axes[1], "p95_ms", TARGET_P95_MS)):
        for name in SCENARIOS:
            axis.plot(sizes, [entry["scenarios"][name][key] for entry in results["runs"]], marker="o", label=name)
        axis.axhline(target, color="grey", linestyle="--", linewidth=1, label=f"target {target:g} ms")
        axis.set_xscale("log")
        axis.set_yscale("log")
        axis.set_xlabel("capsules in the store")
        axis.set_title(f"POST /v1/memory_bootstrap {key[:3]}")
        axis.grid(True, which="both", alpha=0.3)
    axes[0].set_ylabel("latency (ms)")
    axes[1].legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(PLOT, dpi=110)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 10_000, 100_000])
    parser.add_argument("--requests", type=int, default=200)
    parser.add_argument("--warmup", type=int, default=30)
    parser.add_argument("--max-seconds", type=float, default=45.0, help="per scenario (at least 50 requests)")
    parser.add_argument("--no-plot", action="store_true")
    parser.add_argument("--reuse", action="store_true",
                        help="skip loading a size whose store this bench loaded last (same capsule count and id counter)")
    args = parser.parse_args()
    db = bench_database(timeout=60.0)
    try:
        db.apply_schema()
        runs = [run_size(db, size, args.requests, args.warmup, args.max_seconds, args.reuse) for size in args.sizes]
    finally:
        db.close()
    if RESULTS.exists():  # keep the other sizes of an earlier run: one size can be rerun alone
        earlier = json.loads(RESULTS.read_text(encoding="utf-8")).get("runs", [])
        runs = sorted([run for run in earlier if run["capsules"] not in {r["capsules"] for r in runs}] + runs,
                      key=lambda run: run["capsules"])
    results = {
        "benchmark": "memory_bootstrap latency over HTTP (sequential, keep-alive, 127.0.0.1)",
        "targets_at_100k": {"p50_ms": TARGET_P50_MS, "p95_ms": TARGET_P95_MS},
        "machine": {"python": platform.python_version(), "cpus": os.cpu_count(), "platform": platform.platform()},
        "runs": runs,
    }
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    print(f"wrote {RESULTS}")
    if not args.no_plot:
        try:
            plot(results)
        except ImportError:  # matplotlib is not a dependency of graphsvc
            print("no plot: matplotlib is not installed (pip install matplotlib, or --no-plot)")
        else:
            print(f"wrote {PLOT}")


if __name__ == "__main__":
    main()
