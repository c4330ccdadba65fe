"""How a pack's latency grows with the store: each scope's p50 on a small and a large store, interleaved.

    python -m bench.scale_ratio --small bolt://127.0.0.1:7688 --large bolt://127.0.0.1:7689 [--rounds 6]

Both stores must already hold this bench's datasets (`python -m bench.bootstrap_latency --sizes N`
loaded them; NEO4J_USER / NEO4J_PASSWORD / NEO4J_DATABASE apply to both). Nothing is written. One p50 of a few
milliseconds moves by ±20 % between runs on this shared machine, so a ratio of two separate runs
says little: here each round times every scope on the small store, then on the large one, and the
ratio is taken of the medians of the rounds' p50s, so both sides meet the same noise.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import time
from typing import Any

import httpx

from graphsvc.clock import fixed_clock
from graphsvc.service import GraphService
from graphsvc.store.db import Database
from graphsvc.surfaces.http.app import create_app

from tests.integration.live_server import LiveServer

from . import dataset
from .bootstrap_latency import SCENARIOS, reusable
from .term_indexes import rebuild_term_indexes


def scope_p50(client: httpx.Client, body: dict[str, Any], requests: int) -> float:
    """p50 in ms of `requests` packs after 10 untimed ones."""
    for _ in range(10):
        client.post("/v1/memory_bootstrap", json=body).raise_for_status()
    samples = []
    for _ in range(requests):
        began = time.perf_counter()
        client.post("/v1/memory_bootstrap", json=body).raise_for_status()
        samples.append((time.perf_counter() - began) * 1000)
    return statistics.median(samples)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--small", required=True, help="Bolt URI of the small store")
    parser.add_argument("--large", required=True, help="Bolt URI of the large store")
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--requests", type=int, default=60, help="per scope and round")
    parser.add_argument("--rebuild-term-indexes", action="store_true",
                        help="drop and rebuild both stores' full-text term indexes before timing, so the figures "
                        "do not depend on how often their capsules were rewritten (never beside a serving worker)")
    args = parser.parse_args()
    user, password = os.environ.get("NEO4J_USER", "neo4j"), os.environ.get("NEO4J_PASSWORD", "")
    database = os.environ.get("NEO4J_DATABASE", "neo4j")
    words = dataset.vocabulary(random.Random(dataset.SEED))
    terms = [words[17], words[911], words[1703]]
    bodies = {name: {**body, "terms": terms} if "terms" in body else body for name, body in SCENARIOS.items()}
    # A first plan on a cold 1M store can outlast the service's 5 s query timeout: a bench's is 60 s.
    stores = {side: Database(uri, user, password, database, timeout=60.0, query_timeout=60.0)
              for side, uri in (("small", args.small), ("large", args.large))}
    try:
        sizes = {}
        for side, db in stores.items():
            loaded = db.query("bench/loaded")[0]
            if reusable(db, loaded["capsules"]) is None:
                raise SystemExit(f"the {side} store does not hold a bench dataset: load it with bench.bootstrap_latency")
            sizes[side] = loaded["capsules"]
        if args.rebuild_term_indexes:
            for side, db in stores.items():
                print(f"rebuilt the {side} store's term indexes in {rebuild_term_indexes(db):.1f} s", flush=True)
        p50s: dict[str, dict[str, list[float]]] = {side: {name: [] for name in bodies} for side in stores}
        with LiveServer(create_app(GraphService(stores["small"], clock=fixed_clock(dataset.NOW)))) as small, \
                LiveServer(create_app(GraphService(stores["large"], clock=fixed_clock(dataset.NOW)))) as large, \
                httpx.Client(base_url=small.url, timeout=60) as small_client, \
                httpx.Client(base_url=large.url, timeout=60) as large_client:
            clients = {"small": small_client, "large": large_client}
            for round_number in range(args.rounds):
                for name, body in bodies.items():
                    for side, client in clients.items():
                        p50s[side][name].append(scope_p50(client, body, args.requests))
                print(f"round {round_number + 1}/{args.rounds} done", flush=True)
        print(f"\nscope           p50 ms at {sizes['small']:,}   at {sizes['large']:,}   ratio   (median of {args.rounds} rounds)")
        for name in bodies:
            small_p50, large_p50 = (statistics.median(p50s[side][name]) for side in ("small", "large"))
            print(f"{name:<15} {small_p50:>14.2f} {large_p50:>11.2f} {large_p50 / small_p50:>7.2f}")
    finally:
        for db in stores.values():
            db.close()


if __name__ == "__main__":
    main()
