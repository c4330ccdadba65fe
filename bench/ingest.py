"""Bulk ingest throughput: N synthetic capsules in batches through the real write path.

    NEO4J_URI=bolt://127.0.0.1:7690 NEO4J_PASSWORD=... .venv/bin/python -m bench.ingest --n 100000 --wipe

`--via store` (default) calls GraphService.ingest (pydantic validation + one write
transaction per batch: reference check, counter, UNWIND create); `--via http` posts
the same batches to POST /v1/capsules through the ASGI app in-process (adds JSON
and Starlette, no network). Prints one JSON summary; the target is >= 5,000
capsules/s. `--wipe` empties the database first (never point it at data you keep).

`--aliases N` measures instead what N taught alias sets (SPEC §10) cost the write path: the
batches run in `--rounds` rounds, interleaved without / with / with / without ... (ABBA, so a
store growing round by round weighs on both sides alike); before a round with aliases the N sets
are taught in one import, before a round without they are all removed (bench-only statement).
It prints each side's capsules/s (median of its rounds) and the ratio with / without; the issue's
target is a ratio of about 1 (writes at or above today's rate with aliases present). It needs
`--wipe`, as it removes every alias set:

    NEO4J_URI=... .venv/bin/python -m bench.ingest --n 100000 --wipe --aliases 10000 --rounds 8
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import sys
import time
from datetime import datetime, timezone
from typing import Any, Callable

from graphsvc.clock import fixed_clock
from graphsvc.service import GraphService
from graphsvc.store.db import run

from .target import bench_database

NOW = datetime(2026, 12, 1, 12, 0, tzinfo=timezone.utc)
KINDS = ["fact"] * 40 + ["doc"] * 20 + ["task"] * 15 + ["decision"] * 10 + ["failure_pattern"] * 5 + \
        ["procedure"] * 5 + ["constraint"] * 2 + ["epic"] * 2 + ["capability"]
WORDS = [f"{a}{b}" for a in ("ka", "lo", "mi", "ne", "ru", "sa", "ti", "vo") for b in ("rd", "mp", "xt", "nk", "st")]


def batch_items(rng: random.Random, start: int, size: int) -> list[dict[str, Any]]:
    """Deterministic capsules of 30-90 words (~250-700 bytes), spread over 30 projects."""
    items = []
    for n in range(start, start + size):
        project = f"p{n % 10:02d}" + ("", "/api", "/web")[n % 3]
        words = " ".join(rng.choice(WORDS) for _ in range(rng.randint(30, 90)))
        items.append({"project_id": project, "kind": rng.choice(KINDS), "content": f"Capsule {n}: {words}"})
    return items


def http_ingest(service: GraphService) -> tuple[Callable[[dict[str, Any]], Any], Callable[[], None]]:
    from starlette.testclient import TestClient

    from graphsvc.surfaces.http.app import create_app

    client = TestClient(create_app(service))
    client.__enter__()
    # The app warms its plans in the background after start-up and answers 503 until then.
    deadline = time.monotonic() + 120
    while client.get("/readyz").status_code != 200:
        if time.monotonic() > deadline:
            raise SystemExit("the app did not become ready within 120 s")
        time.sleep(0.2)

    def send(body: dict[str, Any]) -> Any:
        response = client.post("/v1/capsules", json=body)
        if response.status_code != 201:
            raise SystemExit(f"HTTP {response.status_code}: {response.text[:300]}")
        return response.json()

    return send, lambda: client.__exit__(None, None, None)


def alias_lines(count: int) -> list[str]:
    """`count` alias sets as import lines: terms of the capsules' words, a third store-wide, the rest
    under the projects' prefixes, two aliases each."""
    lines = []
    for n in range(count):
        scope = {} if n % 3 == 0 else {"project_prefix": f"p{n % 10:02d}"}
        term = f"{WORDS[n % len(WORDS)]} {n}"
        lines.append(json.dumps({"alias": {"term": term, "aliases": [f"alias{n}", f"{WORDS[(n + 1) % len(WORDS)]}{n}"],
                                           **scope}}))
    return lines


SETTLE_S = 5.0


def alias_rounds(service: GraphService, send: Callable[[dict[str, Any]], Any], bodies: list[dict[str, Any]],
                 aliases: int, rounds: int) -> dict[str, Any]:
    """The batches split into `rounds` rounds, ABBA without/with aliases; capsules/s of each round."""
    lines = alias_lines(aliases)
    # Untimed: the first batches pay for cold caches and a JVM still compiling the write path (the
    # first three rounds ran at ~60 % of the later ones), which would count against whichever side
    # they fall on.
    warm = max(1, len(bodies) // 10)
    for body in bodies[:warm]:
        send(body)
    bodies = bodies[warm:]
    per_round = -(-len(bodies) // rounds)
    sides: dict[str, list[float]] = {"without": [], "with": []}
    for index in range(rounds):
        chunk = bodies[index * per_round:(index + 1) * per_round]
        if not chunk:
            break
        side = "with" if index % 4 in (1, 2) else "without"
        if side == "with":
            service.import_lines(lines)  # teaching a set twice changes nothing: the N sets, once
        else:
            service.db.write(lambda tx: run(tx, "bench/delete_aliases"))
        stored = len(service.aliases({})["aliases"])  # store-wide ones only: the check is "some" or "none"
        assert (stored > 0) == (side == "with" and aliases > 0), (side, stored)
        # Teaching or removing N sets is itself a burst of writes, and Neo4j's work after it (index
        # flushes, garbage) would land in the timed ingests, which at ~8,000 capsules/s last ~1.5 s a
        # round. Community has no checkpoint procedure, so every round (both sides) waits SETTLE_S first.
        time.sleep(SETTLE_S)
        began = time.perf_counter()
        for body in chunk:
            send(body)
        sides[side].append(sum(len(body["items"]) for body in chunk) / (time.perf_counter() - began))
    rates = {side: round(statistics.median(values), 1) if values else None for side, values in sides.items()}
    return {
        "benchmark": "ingest_aliases",
        "aliases": aliases,
        "rounds": {side: [round(value, 1) for value in values] for side, values in sides.items()},
        "capsules_per_s_without": rates["without"],
        "capsules_per_s_with": rates["with"],
        "ratio_with_over_without": round(rates["with"] / rates["without"], 3)
        if rates["with"] and rates["without"] else None,
    }


def relate(service: GraphService, rng: random.Random, tasks: list[str], count: int) -> float:
    """Add `count` distinct BLOCKS edges between nearby tasks; returns the seconds it took."""
    edges: dict[tuple[str, str], None] = {}
    while len(edges) < count and len(tasks) > 1:
        a = rng.randrange(len(tasks) - 1)
        b = min(len(tasks) - 1, a + 1 + rng.randrange(50))
        pair = (tasks[a], tasks[b]) if rng.random() < 0.9 else (tasks[b], tasks[a])
        edges[pair] = None
    began = time.perf_counter()
    pairs = list(edges)
    for start in range(0, len(pairs), 1000):
        service.relate({"add": [{"type": "BLOCKS", "from": a, "to": b} for a, b in pairs[start:start + 1000]]})
    return time.perf_counter() - began


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.ingest", description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=100_000, help="capsules to ingest")
    parser.add_argument("--batch", type=int, default=1000, help="capsules per request (max 1000)")
    parser.add_argument("--via", choices=["store", "http"], default="store")
    parser.add_argument("--wipe", action="store_true", help="empty the database first")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--relate", type=int, default=0,
                        help="then add this many BLOCKS edges among the ingested tasks, 1000 per relate call "
                             "(90%% old -> new, 10%% against the id order, which reorders)")
    parser.add_argument("--aliases", type=int, default=0,
                        help="compare ingest with this many taught alias sets against none, interleaved "
                             "(needs --wipe: it removes every alias set)")
    parser.add_argument("--rounds", type=int, default=8,
                        help="with --aliases: rounds, ABBA without/with (the first batch runs untimed before them)")
    args = parser.parse_args(argv)
    if args.aliases and not args.wipe:
        parser.error("--aliases removes every alias set between rounds: give --wipe (a store you do not keep)")
    if args.aliases and args.rounds < 2:
        parser.error("--rounds must be at least 2 (one without aliases, one with)")

    db = bench_database()
    db.timeout = 60.0
    service = GraphService(db, clock=fixed_clock(NOW))
    if args.wipe:
        db.wipe_all()
    service.ensure_schema()
    rng = random.Random(args.seed)
    send, close = (http_ingest(service) if args.via == "http" else (service.ingest, lambda: None))
    latencies: list[float] = []
    tasks: list[str] = []
    first_id = last_id = None
    # The synthetic batches are made before the clock starts: the figure is the service's
    # throughput, not this client's random text generation (~20% of the time when it was inside).
    bodies = [{"items": batch_items(rng, start, min(args.batch, args.n - start))} for start in range(0, args.n, args.batch)]
    if args.aliases:
        try:
            summary = alias_rounds(service, send, bodies, args.aliases, args.rounds)
        finally:
            close()
        db.close()
        summary.update({"via": args.via, "neo4j_uri": db.uri, "capsules": args.n, "batch": args.batch,
                        "cpu_count": os.cpu_count()})
        print(json.dumps(summary, indent=2))
        return 0
    began = time.perf_counter()
    try:
        for body in bodies:
            t0 = time.perf_counter()
            ids = send(body)["ids"]
            latencies.append(time.perf_counter() - t0)
            tasks += [i for i, item in zip(ids, body["items"]) if item["kind"] in ("task", "epic")]
            first_id = first_id or ids[0]
            last_id = ids[-1]
    finally:
        close()
    elapsed = time.perf_counter() - began
    relate_seconds = relate(service, rng, tasks, args.relate) if args.relate else None
    stored = db._driver.execute_query("MATCH (c:Capsule) RETURN count(c) AS n").records[0]["n"]
    db.close()
    ordered = sorted(latencies)
    summary = {
        "benchmark": "ingest",
        "via": args.via,
        "neo4j_uri": db.uri,
        "capsules": args.n,
        "batch": args.batch,
        "batches": len(latencies),
        "seconds": round(elapsed, 3),
        "capsules_per_s": round(args.n / elapsed, 1),
        "batch_ms_p50": round(statistics.median(ordered) * 1000, 1),
        "batch_ms_p95": round(ordered[int(0.95 * (len(ordered) - 1))] * 1000, 1),
        "batch_ms_max": round(ordered[-1] * 1000, 1),
        "first_id": first_id,
        "last_id": last_id,
        "capsules_in_store": stored,
        "target_per_s": 5000,
        "cpu_count": os.cpu_count(),
    }
    if relate_seconds is not None:
        summary.update({"blocks_edges": args.relate, "relate_seconds": round(relate_seconds, 3),
                        "edges_per_s": round(args.relate / relate_seconds, 1), "edges_target_per_s": 2000})
    print(json.dumps(summary, indent=2))
    return 0 if summary["capsules_per_s"] >= 5000 else 1


if __name__ == "__main__":
    sys.exit(main())
