"""A typical pack with a scoped API key against today's pack (issue 27's target: p50 within 10 %).

    python -m bench.keyed_pack [--size 100000] [--requests 300] [--reuse]

Loads bench.dataset's store (or reuses it, as bench.bootstrap_latency does), serves the real app
with auth on (GRAPHSVC_API_TOKEN and API keys) and times sequential POST /v1/memory_bootstrap calls
for three scenarios, interleaved in rounds so that drift on the machine hits them alike:

  token+fence   the env token with project_prefix p05 (today's typical pack, plus the auth check)
  key           a key scoped to p05, no fence: the same pack, fenced by the key's scope
  key2          a key scoped to p05 and p06, no fence: the union of two projects

Prints p50 / p95 per scenario and key's p50 relative to token+fence. Needs a Neo4j it may WIPE
(NEO4J_URI, else the `bench` instance).
"""

from __future__ import annotations

import argparse
import statistics
import time

import httpx

from graphsvc.clock import fixed_clock
from graphsvc.service import GraphService
from graphsvc.store.migrate import migrate
from graphsvc.surfaces.http.app import create_app

from tests.integration.live_server import LiveServer

from . import dataset
from .bootstrap_latency import percentile, reusable
from .target import bench_database

TOKEN = "bench-keyed-pack-token"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--size", type=int, default=100_000)
    parser.add_argument("--requests", type=int, default=300)
    parser.add_argument("--reuse", action="store_true")
    args = parser.parse_args()
    db = bench_database(timeout=60.0)
    try:
        db.apply_schema()
        if not (args.reuse and reusable(db, args.size)):
            db.wipe_all()
            dataset.load(db, dataset.build(args.size))
        migrate(db)
        service = GraphService(db, clock=fixed_clock(dataset.NOW))
        one = service.keys_create({"label": "bench-p05", "rights": "read", "prefixes": ["p05"]})
        two = service.keys_create({"label": "bench-p05-p06", "rights": "read", "prefixes": ["p05", "p06"]})
        scenarios = {
            "token+fence": (TOKEN, {"project_prefix": "p05"}),
            "key": (one["key"], {}),
            "key2": (two["key"], {}),
        }
        samples: dict[str, list[float]] = {name: [] for name in scenarios}
        with LiveServer(create_app(service, api_token=TOKEN)) as live, httpx.Client(base_url=live.url, timeout=60) as http:
            for _ in range(30):  # warm-up: plans, caches, the JIT
                for credential, body in scenarios.values():
                    http.post("/v1/memory_bootstrap", json=body, headers={"Authorization": f"Bearer {credential}"})
            for _ in range(args.requests):
                for name, (credential, body) in scenarios.items():
                    began = time.perf_counter()
                    answer = http.post("/v1/memory_bootstrap", json=body, headers={"Authorization": f"Bearer {credential}"})
                    samples[name].append((time.perf_counter() - began) * 1000)
                    assert answer.status_code == 200, answer.text
        for name, taken in samples.items():
            print(f"{args.size:>7} {name:<12} p50 {statistics.median(taken):7.2f} ms  p95 {percentile(taken, 0.95):7.2f} ms")
        ratio = statistics.median(samples["key"]) / statistics.median(samples["token+fence"])
        print(f"key / token+fence p50: {ratio:.3f} (target <= 1.10)")
        for made in (one, two):
            service.keys_revoke(made["id"])
    finally:
        db.close()


if __name__ == "__main__":
    main()
