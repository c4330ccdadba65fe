"""Many agents on one DAG through leased claims (SPEC §12), against a real `graphsvc serve`.

    .venv/bin/python -m bench.swarm [--agents 16] [--tasks 1000] [--seconds 60] [--workers 2]
                                    [--work-ms 50 250] [--dying 2] [--lease-s 10]

A project of `--tasks` tasks is written first (layers of 25; each task blocked by one or two tasks
of the layer before, so only the first layer is ready at the start and work unlocks as it is done).
Then `--agents` agents, each on one keep-alive connection, loop: `memory_claim` (no task_id: the
first ready task their own pack shows) -> work (sleep a random time in --work-ms) -> mark the task
done (`PATCH /v1/capsules/{id}`). One agent in eight also asks for its pack (`agent` given) between
two tasks, so packs are measured under the claim load. `--dying` agents claim one task each, with
`--lease-s`, and then stop without a word: another agent must get that task once the lease runs out.

It reports tasks done per second, claim percentiles (all of them, and the refused and the taken
apart) and pack percentiles, double claims (a task claimed by a second agent while the first
agent's lease was live and not ended: must be 0), tasks marked done by two agents (must be 0), and
how long each dead agent's task waited before another agent took it (about its lease). Every claim
answer is logged with the time it was received, so the checks are made on what the agents were
told, not on the store afterwards. Uses the local `bench` Neo4j unless NEO4J_URI is set; the store
is wiped first.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import time
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from .concurrency import Connection, Service
from .mixed import pct
from .target import bench_database

PROJECT = "swarm"
LAYER = 25


@dataclass
class Log:
    claims: list[tuple[float, str, str, float]] = field(default_factory=list)  # (at, agent, task, lease_until)
    done: dict[str, list[str]] = field(default_factory=dict)  # task -> agents that marked it done
    ended: dict[tuple[str, str], float] = field(default_factory=dict)  # (agent, task) -> when its lease ended
    dead: dict[str, float] = field(default_factory=dict)  # task -> when its dead agent claimed it
    ms: dict[str, list[float]] = field(default_factory=dict)
    refused: dict[str, int] = field(default_factory=dict)
    errors: dict[str, int] = field(default_factory=dict)


def _epoch(instant: str) -> float:
    return datetime.fromisoformat(instant.replace("Z", "+00:00")).timestamp()


async def build_dag(port: int, tasks: int, seed: int) -> list[str]:
    """Ingest the DAG layer by layer (an ingest names stored capsules only); return the task ids."""
    rng = random.Random(seed)
    conn = Connection(port)
    ids: list[str] = []
    try:
        previous: list[str] = []
        for start in range(0, tasks, LAYER):
            items = []
            for n in range(start, min(tasks, start + LAYER)):
                item: dict[str, Any] = {"project_id": PROJECT, "kind": "task", "content": f"swarm task {n}"}
                if previous:
                    item["blocked_by"] = rng.sample(previous, min(len(previous), rng.choice((1, 2))))
                items.append(item)
            status, body = await conn.request("POST", "/v1/capsules", {"items": items})
            if status != 201:
                raise SystemExit(f"building the DAG failed: {status} {body[:300]!r}")
            previous = json.loads(body)["ids"]
            ids += previous
    finally:
        conn.close()
    return ids


async def agent(port: int, name: str, stop_at: float, log: Log, rng: random.Random, work_ms: tuple[int, int],
                lease_s: int, asks_packs: bool) -> None:
    conn = Connection(port)
    try:
        while time.perf_counter() < stop_at:
            began = time.perf_counter()
            status, body = await conn.request("POST", "/v1/memory_claim",
                                              {"agent": name, "project_id": PROJECT, "lease_s": lease_s})
            took = 1000 * (time.perf_counter() - began)
            log.ms.setdefault("claim", []).append(took)
            if status == 200:  # refusals answer from a read, a claim writes: each has its percentiles too
                outcome = "claim_refused" if json.loads(body)["claimed"] is None else "claim_taken"
                log.ms.setdefault(outcome, []).append(took)
            if status != 200:
                log.errors[f"claim {status}"] = log.errors.get(f"claim {status}", 0) + 1
                await asyncio.sleep(float(conn.retry_after or 0.2))
                continue
            answer = json.loads(body)
            if answer["claimed"] is None:
                log.refused[answer["reason"]] = log.refused.get(answer["reason"], 0) + 1
                await asyncio.sleep(0.1)
                continue
            task = answer["claimed"]["id"]
            log.claims.append((time.time(), name, task, _epoch(answer["claimed"]["lease_until"])))
            await asyncio.sleep(rng.uniform(*work_ms) / 1000)
            began = time.perf_counter()
            status, body = await conn.request("PATCH", f"/v1/capsules/{task}", {"status": "done"})
            log.ms.setdefault("done", []).append(1000 * (time.perf_counter() - began))
            if status == 200:
                log.ended[(name, task)] = time.time()
                log.done.setdefault(task, []).append(name)
            else:
                log.errors[f"done {status}"] = log.errors.get(f"done {status}", 0) + 1
            if asks_packs:
                began = time.perf_counter()
                status, _ = await conn.request("POST", "/v1/memory_bootstrap", {"project_id": PROJECT, "agent": name})
                log.ms.setdefault("pack", []).append(1000 * (time.perf_counter() - began))
    finally:
        conn.close()


async def dying_agent(port: int, name: str, log: Log, lease_s: int) -> None:
    """Claim one task and vanish (a crashed agent): its lease is the only thing that frees the task."""
    conn = Connection(port)
    try:
        status, body = await conn.request("POST", "/v1/memory_claim",
                                          {"agent": name, "project_id": PROJECT, "lease_s": lease_s})
        if status == 200 and json.loads(body)["claimed"] is not None:
            claimed = json.loads(body)["claimed"]
            log.claims.append((time.time(), name, claimed["id"], _epoch(claimed["lease_until"])))
            log.dead[claimed["id"]] = time.time()
    finally:
        conn.close()


def double_claims(log: Log) -> list[dict[str, Any]]:
    """Claims of a task by another agent while an earlier holder's lease was live and not ended."""
    found = []
    by_task: dict[str, list[tuple[float, str, float]]] = {}
    for at, name, task, until in sorted(log.claims):
        for held_at, holder, held_until in by_task.get(task, []):
            if holder == name:
                continue
            ended = log.ended.get((holder, task), held_until)
            if at < min(held_until, ended) - 0.05:  # 50 ms for the gap between commit and answer
                found.append({"task": task, "holder": holder, "claimer": name, "at": at, "lease_until": held_until})
        by_task.setdefault(task, []).append((at, name, until))
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--agents", type=int, default=16)
    parser.add_argument("--tasks", type=int, default=1000)
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--work-ms", type=int, nargs=2, default=[50, 250])
    parser.add_argument("--dying", type=int, default=2)
    parser.add_argument("--lease-s", type=int, default=10)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    db = bench_database(timeout=60.0)
    try:
        db.apply_schema()
        db.wipe_all()
    finally:
        db.close()
    log = Log()
    with Service("swarm", ".", {"GRAPHSVC_WORKERS": str(args.workers)}) as service:
        ids = asyncio.run(build_dag(service.port, args.tasks, args.seed))

        async def run() -> float:
            await asyncio.gather(*[dying_agent(service.port, f"dying-{n}", log, args.lease_s)
                                   for n in range(args.dying)])
            started = time.perf_counter()
            stop_at = started + args.seconds
            await asyncio.gather(*[agent(service.port, f"agent-{n}", stop_at, log, random.Random(args.seed + n),
                                         tuple(args.work_ms), args.lease_s, asks_packs=n % 8 == 0)
                                   for n in range(args.agents)])
            return time.perf_counter() - started

        elapsed = asyncio.run(run())
    doubles = double_claims(log)
    done_twice = sorted(task for task, agents in log.done.items() if len(agents) > 1)
    waits = []
    for task, claimed_at in log.dead.items():
        later = [at for at, name, claimed, _ in log.claims if claimed == task and not name.startswith("dying-")]
        waits.append(round(min(later) - claimed_at, 1) if later else None)
    report = {
        "agents": args.agents, "tasks": len(ids), "seconds": round(elapsed, 1), "workers": args.workers,
        "tasks_done": len(log.done), "tasks_done_per_s": round(len(log.done) / elapsed, 1),
        "double_claims": len(doubles), "tasks_done_twice": len(done_twice),
        "dead_agents_tasks_waited_s": waits, "lease_s": args.lease_s,
        "refused": log.refused, "errors": log.errors,
        "ms": {name: {"n": len(ms), "p50": pct(ms, .5), "p95": pct(ms, .95), "p99": pct(ms, .99)}
               for name, ms in sorted(log.ms.items())},
        "examples": {"double_claims": doubles[:3], "done_twice": done_twice[:3]},
    }
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
