"""What idle watches cost, and how fast a write reaches them (SPEC §13, issue 31's watcher targets).

Runs `graphsvc serve --workers W` from this tree on the bench Neo4j (bench/target.py: NEO4J_URI,
else the local `bench` instance; the store is wiped), opens N watches over N connections, spread
over `--scopes` projects, and then:

1. idle: nothing is written for `--idle-s`; reports the service's CPU (all its processes, % of one
   core), Neo4j's CPU when it is a local instance, the poller's reads per second, and the packs the
   watches computed meanwhile (target: none);
2. wake: `--writes` ingests, one every `--gap-s`, each into one project, each followed by the wake-up
   of every watch of that project; reports write-to-wake latency (from the write's answer to each
   watch's new pack, p50 / p95 / max) and watches that missed a write (target: none).

    python -m bench.watchers --watchers 500 --workers 2            # figures (a quiet machine)
    python -m bench.watchers --watchers 8 --idle-s 2 --writes 3    # smoke run

`--ingest-rounds R` measures instead what idle watches cost the writers: R rounds, each a block
with the N watches open and idle and a block with none, in alternating order (so a shared
machine's drift hits both alike); each block sends `--ingests` batches of 25 capsules, one after
the other, into a project no watch covers (the watches stay idle; the poller still sees every
write's change mark). Reports capsules/s and the p50 / p95 of one batch's ingest per condition, and
the watched/none ratios (a rate ratio near 1, a latency ratio near 1: watches cost writes nothing).

    python -m bench.watchers --watchers 500 --ingest-rounds 6 --ingests 40   # figures (a quiet machine)
    python -m bench.watchers --watchers 8 --ingest-rounds 2 --ingests 3 --settle-s 1   # smoke run
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import time
from typing import Any

import httpx

from bench.concurrency import Service, neo4j_pid, proc_cpu
from bench.target import bench_database


def metric(text: str, name: str) -> float:
    """The sum over a counter's samples (every label set) in a /metrics exposition."""
    return sum(float(line.rsplit(" ", 1)[1]) for line in text.splitlines()
               if line.startswith(name) and not line.startswith(name + "_created"))


async def watcher(client: httpx.AsyncClient, project: str, etag: str, woke: list[tuple[str, float]],
                  stop: asyncio.Event, wait_s: int) -> None:
    """Watch one project's pack until `stop`, recording when each new pack arrives."""
    while not stop.is_set():
        try:
            answer = await client.post("/v1/memory_bootstrap/watch",
                                       json={"project_id": project, "etag": etag, "wait_s": wait_s})
        except httpx.TransportError:
            await asyncio.sleep(0.2)
            continue
        if answer.status_code == 200:
            etag = answer.headers["etag"]
            woke.append((project, time.monotonic()))
        elif answer.status_code != 304:
            await asyncio.sleep(0.2)


async def run(args: argparse.Namespace, port: int, service_pid: int) -> dict[str, Any]:
    base = f"http://127.0.0.1:{port}"
    projects = [f"watch/{n}" for n in range(args.scopes)]
    limits = httpx.Limits(max_connections=args.watchers + 8, max_keepalive_connections=args.watchers + 8)
    async with httpx.AsyncClient(base_url=base, timeout=90, limits=limits) as http:
        for project in projects:
            await http.post("/v1/capsules", json={"project_id": project, "kind": "task", "content": f"Task of {project}"})
        etags = {p: (await http.post("/v1/memory_bootstrap", json={"project_id": p})).headers["etag"] for p in projects}
        woke: list[tuple[str, float]] = []
        stop = asyncio.Event()
        clients = [httpx.AsyncClient(base_url=base, timeout=90) for _ in range(args.watchers)]
        tasks = [asyncio.create_task(watcher(clients[n], projects[n % len(projects)], etags[projects[n % len(projects)]],
                                             woke, stop, args.wait_s)) for n in range(args.watchers)]
        await asyncio.sleep(args.settle_s)  # every watch registered and computed its first pack
        neo = neo4j_pid()
        before = (await http.get("/metrics")).text
        cpu0, neo0, t0 = proc_cpu(service_pid), proc_cpu(neo) if neo else 0.0, time.monotonic()
        await asyncio.sleep(args.idle_s)
        cpu1, neo1, t1 = proc_cpu(service_pid), proc_cpu(neo) if neo else 0.0, time.monotonic()
        after = (await http.get("/metrics")).text
        idle = {
            "seconds": round(t1 - t0, 1),
            "service_cpu_pct_of_one_core": round(100 * (cpu1 - cpu0) / (t1 - t0), 2),
            "neo4j_cpu_pct_of_one_core": round(100 * (neo1 - neo0) / (t1 - t0), 2) if neo else None,
            "polls_per_s": round((metric(after, "graphsvc_watch_polls_total")
                                  - metric(before, "graphsvc_watch_polls_total")) / (t1 - t0), 2),
            "packs_computed": metric(after, "graphsvc_watch_packs_total") - metric(before, "graphsvc_watch_packs_total"),
            "watchers_waiting": metric(after, "graphsvc_watchers"),
        }
        latencies: list[float] = []
        missed = 0
        per_project = args.watchers // len(projects)
        for n in range(args.writes):
            project = projects[n % len(projects)]
            seen = len(woke)
            await http.post("/v1/capsules", json={"project_id": project, "kind": "constraint", "content": f"Rule {n}"})
            wrote = time.monotonic()
            expected = per_project + (1 if n % len(projects) < args.watchers % len(projects) else 0)
            deadline = wrote + 10
            while sum(1 for p, _ in woke[seen:] if p == project) < expected and time.monotonic() < deadline:
                await asyncio.sleep(0.01)
            arrivals = [at - wrote for p, at in woke[seen:] if p == project]
            latencies += arrivals
            missed += expected - len(arrivals)
            await asyncio.sleep(args.gap_s)
        await end_watches(stop, tasks, clients)
    ordered = sorted(latencies)
    return {
        "watchers": args.watchers, "workers": args.workers, "scopes": args.scopes,
        "idle": idle,
        "wake": {
            "writes": args.writes, "wakes": len(latencies), "missed": missed,
            "p50_s": round(statistics.median(ordered), 3) if ordered else None,
            "p95_s": round(ordered[max(0, int(0.95 * len(ordered)) - 1)], 3) if ordered else None,
            "max_s": round(ordered[-1], 3) if ordered else None,
        },
    }


#: Capsules per ingest in the ingest-rate mode (issue 31: "an ingest of 25").
BATCH = 25


async def open_watches(base: str, args: argparse.Namespace, projects: list[str], etags: dict[str, str],
                       woke: list[tuple[str, float]]) -> tuple[asyncio.Event, list[asyncio.Task], list[httpx.AsyncClient]]:
    stop = asyncio.Event()
    clients = [httpx.AsyncClient(base_url=base, timeout=90) for _ in range(args.watchers)]
    tasks = [asyncio.create_task(watcher(clients[n], projects[n % len(projects)], etags[projects[n % len(projects)]],
                                         woke, stop, args.wait_s)) for n in range(args.watchers)]
    return stop, tasks, clients


async def end_watches(stop: asyncio.Event, tasks: list[asyncio.Task], clients: list[httpx.AsyncClient]) -> None:
    stop.set()
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
    for client in clients:
        await client.aclose()


async def close_watches(http: httpx.AsyncClient, stop: asyncio.Event, tasks: list[asyncio.Task],
                        clients: list[httpx.AsyncClient]) -> float:
    """End the watches and wait (at most 30 s) until the service counts none; returns the count left."""
    await end_watches(stop, tasks, clients)
    left, deadline = 0.0, time.monotonic() + 30
    while time.monotonic() < deadline:
        left = metric((await http.get("/metrics")).text, "graphsvc_watchers")
        if left == 0:
            break
        await asyncio.sleep(0.2)
    return left


async def ingest_block(http: httpx.AsyncClient, project: str, batches: int, tag: str) -> tuple[float, list[float]]:
    """`batches` ingests of BATCH capsules in a row: (seconds taken, each ingest's ms)."""
    ms: list[float] = []
    began = time.perf_counter()
    for n in range(batches):
        items = [{"project_id": project, "kind": "fact", "content": f"Fact {tag} {n} {i}"} for i in range(BATCH)]
        sent = time.perf_counter()
        answer = await http.post("/v1/capsules", json={"items": items})
        ms.append(1000 * (time.perf_counter() - sent))
        if answer.status_code != 201:
            raise SystemExit(f"an ingest failed: {answer.status_code} {answer.text[:300]}")
    return time.perf_counter() - began, ms


def _p(samples: list[float], q: float) -> float | None:
    ordered = sorted(samples)
    return round(ordered[min(len(ordered) - 1, int(q * (len(ordered) - 1) + 0.5))], 1) if ordered else None


async def ingest_rate(args: argparse.Namespace, port: int) -> dict[str, Any]:
    base = f"http://127.0.0.1:{port}"
    projects = [f"watch/{n}" for n in range(args.scopes)]
    async with httpx.AsyncClient(base_url=base, timeout=90) as http:
        for project in projects:
            await http.post("/v1/capsules", json={"project_id": project, "kind": "task", "content": f"Task of {project}"})
        etags = {p: (await http.post("/v1/memory_bootstrap", json={"project_id": p})).headers["etag"] for p in projects}
        # One unrecorded block: first plans and first writes are paid before either condition counts.
        await ingest_block(http, "ingest/warm", max(1, args.ingests // 4), "warm")
        seconds = {"none": 0.0, "watched": 0.0}
        ms: dict[str, list[float]] = {"none": [], "watched": []}
        woke: list[tuple[str, float]] = []
        lingering = 0.0
        for round_ in range(args.ingest_rounds):
            for condition in (("none", "watched") if round_ % 2 == 0 else ("watched", "none")):
                opened = None
                if condition == "watched":
                    opened = await open_watches(base, args, projects, etags, woke)
                    await asyncio.sleep(args.settle_s)  # every watch registered and waiting
                took, batch_ms = await ingest_block(http, "ingest/0", args.ingests, f"{round_}-{condition}")
                seconds[condition] += took
                ms[condition] += batch_ms
                if opened is not None:
                    lingering = max(lingering, await close_watches(http, *opened))
    result: dict[str, Any] = {"watchers": args.watchers, "workers": args.workers, "scopes": args.scopes,
                              "rounds": args.ingest_rounds, "ingests_per_block": args.ingests, "batch": BATCH,
                              "watch_wakes_during_ingests": len(woke), "watches_left_after_close": lingering}
    for condition in ("none", "watched"):
        result[condition] = {"capsules_per_s": round(BATCH * len(ms[condition]) / seconds[condition], 1),
                             "p50_ms": _p(ms[condition], 0.50), "p95_ms": _p(ms[condition], 0.95)}
    result["ratio_watched_over_none"] = {
        "capsules_per_s": round(result["watched"]["capsules_per_s"] / result["none"]["capsules_per_s"], 3),
        "p50_ms": round(result["watched"]["p50_ms"] / result["none"]["p50_ms"], 3),
        "p95_ms": round(result["watched"]["p95_ms"] / result["none"]["p95_ms"], 3),
    }
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--watchers", type=int, default=500)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--scopes", type=int, default=50, help="projects the watches are spread over")
    parser.add_argument("--idle-s", type=float, default=30.0)
    parser.add_argument("--settle-s", type=float, default=5.0)
    parser.add_argument("--writes", type=int, default=20)
    parser.add_argument("--gap-s", type=float, default=0.5)
    parser.add_argument("--wait-s", type=int, default=60)
    parser.add_argument("--ingest-rounds", type=int, default=0,
                        help="measure the ingest rate with N idle watches vs none, in this many interleaved rounds")
    parser.add_argument("--ingests", type=int, default=40, help="ingests of 25 capsules per block (--ingest-rounds)")
    args = parser.parse_args()
    args.scopes = max(1, min(args.scopes, args.watchers))
    db = bench_database()
    db.wipe_all()
    db.close()
    with Service("watchers", ".", {"GRAPHSVC_WORKERS": str(args.workers)}) as service:
        assert service.proc is not None
        if args.ingest_rounds > 0:
            result = asyncio.run(ingest_rate(args, service.port))
        else:
            result = asyncio.run(run(args, service.port, service.proc.pid))
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
