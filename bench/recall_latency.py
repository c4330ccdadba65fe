"""memory_retrieve and memory_digest latency over HTTP (p50 / p95), on bench.dataset's stores.

    python -m bench.recall_latency [--sizes 1000 10000 100000 1000000] [--requests 200] [--reuse] [--only digest]

Needs a Neo4j it may WIPE (NEO4J_URI / NEO4J_USER / NEO4J_PASSWORD; never point it at data you keep).
Same method as bench.bootstrap_latency (whose loader, reuse check and percentile it uses): the real app
under uvicorn on 127.0.0.1, sequential keep-alive POSTs after a warm-up, the clock pinned to the
dataset's instant. Targets (issue 26): retrieve p95 <= 40 ms at 1M for one project with 3 terms and
<= 150 ms for the whole store; digest p95 <= 40 ms at 1M for one project.

Scenarios:
  retrieve/project       project_prefix p05, 3 terms
  retrieve/project+alias the same after teaching each term one alias (another dataset word)
  retrieve/store         no fence, 3 terms
  digest/project         project_prefix p05
  digest/dag             project_prefix p00 (the project holding the large blocks DAG)

Writes bench/results/recall_latency.json.
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
from graphsvc.service import GraphService
from graphsvc.store.migrate import migrate
from graphsvc.store.db import Database
from graphsvc.surfaces.http.app import create_app

from tests.integration.live_server import LiveServer

from . import dataset
from .bootstrap_latency import percentile, reusable
from .target import bench_database

RESULTS = Path(__file__).resolve().parent / "results" / "recall_latency.json"


def time_calls(client: httpx.Client, path: str, body: dict[str, Any], requests: int, warmup: int,
               max_seconds: float) -> dict[str, Any]:
    first = client.post(path, json=body)
    first.raise_for_status()
    for _ in range(warmup):
        client.post(path, json=body)
    samples: list[float] = []
    deadline = time.perf_counter() + max_seconds
    while len(samples) < requests and (len(samples) < 50 or time.perf_counter() < deadline):
        began = time.perf_counter()
        response = client.post(path, json=body)
        samples.append((time.perf_counter() - began) * 1000)
        assert response.status_code == 200 and response.content == first.content, "answer changed between calls"
    answer = first.json()
    summary = {key: answer[key] for key in ("outcome", "results_total", "excluded", "ready_total", "blocked_total")
               if key in answer}
    return {"path": path, "request": body, "p50_ms": round(statistics.median(samples), 2),
            "p95_ms": round(percentile(samples, 0.95), 2), "max_ms": round(max(samples), 2),
            "requests": len(samples), "answer": summary, "body_bytes": len(first.content)}


def run_size(db: Database, size: int, requests: int, warmup: int, max_seconds: float, reuse: bool,
             only: str | None = None) -> dict[str, Any]:
    kept = reusable(db, size) if reuse else None
    if kept is None:
        db.wipe_all()
        dataset.load(db, dataset.build(size))
    migrate(db)
    words = dataset.vocabulary(random.Random(dataset.SEED))
    terms = [words[17], words[911], words[1703]]
    service = GraphService(db, clock=fixed_clock(dataset.NOW))
    scenarios: dict[str, tuple[str, dict[str, Any]]] = {
        "retrieve/project": ("/v1/memory_retrieve", {"project_prefix": "p05", "terms": terms}),
        "retrieve/store": ("/v1/memory_retrieve", {"terms": terms}),
        "digest/project": ("/v1/memory_digest", {"project_prefix": "p05"}),
        "digest/dag": ("/v1/memory_digest", {"project_prefix": "p00"}),
    }
    if only is not None:
        scenarios = {name: scenario for name, scenario in scenarios.items() if name.startswith(only)}
    result: dict[str, Any] = {"capsules": size, "scenarios": {}}
    with LiveServer(create_app(service)) as live, httpx.Client(base_url=live.url, timeout=60) as client:
        for name, (path, body) in scenarios.items():
            result["scenarios"][name] = stats = time_calls(client, path, body, requests, warmup, max_seconds)
            print(f"{size:>7} {name:<24} p50 {stats['p50_ms']:7.2f} ms  p95 {stats['p95_ms']:7.2f} ms  "
                  f"{stats['answer']}", flush=True)
        if only is not None and not "retrieve/project+alias".startswith(only):
            return result
        for offset, term in enumerate(terms):  # the aliased run last: the stores above stay alias-free
            service.alias({"term": term, "aliases": [words[1900 + offset]]})
        name, path, body = "retrieve/project+alias", "/v1/memory_retrieve", {"project_prefix": "p05", "terms": terms}
        result["scenarios"][name] = stats = time_calls(client, path, body, requests, warmup, max_seconds)
        print(f"{size:>7} {name:<24} p50 {stats['p50_ms']:7.2f} ms  p95 {stats['p95_ms']:7.2f} ms  "
              f"{stats['answer']}", flush=True)
        for term in terms:
            service.alias({"term": term, "forget": True})
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 10_000, 100_000])
    parser.add_argument("--requests", type=int, default=200)
    parser.add_argument("--warmup", type=int, default=30)
    parser.add_argument("--max-seconds", type=float, default=45.0, help="per scenario (at least 50 requests)")
    parser.add_argument("--reuse", action="store_true",
                        help="skip loading a size whose store bench.bootstrap_latency or this bench loaded last")
    parser.add_argument("--only", help="run only the scenarios whose name starts with this (e.g. digest)")
    args = parser.parse_args()
    db = bench_database(timeout=60.0)
    try:
        db.apply_schema()
        runs = [run_size(db, size, args.requests, args.warmup, args.max_seconds, args.reuse, args.only) for size in args.sizes]
    finally:
        db.close()
    results = {"benchmark": "memory_retrieve / memory_digest latency over HTTP (sequential, keep-alive, 127.0.0.1)",
               "machine": {"python": platform.python_version(), "cpus": os.cpu_count(),
                           "platform": platform.platform()},
               "runs": runs}
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    print(f"wrote {RESULTS}")


if __name__ == "__main__":
    main()
