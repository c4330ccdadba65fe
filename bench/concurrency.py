"""Many agents at once: closed-loop clients against a real `graphsvc serve` (issue 11).

    NEO4J_URI=bolt://127.0.0.1:7713 NEO4J_PASSWORD=... .venv/bin/python -m bench.concurrency \\
        [--clients 1 4 16 64] [--seconds 8] [--target new=. --target base=/tmp/h11-base] [--load]

For every load x C x target, in that order (targets INTERLEAVED per C, so a shared machine's
noise hits them alike): C clients, each a closed loop with no think time over one keep-alive
connection, for `--seconds` after a 2 s warm-up; before a load's first measured cell, an unrecorded
4-client cell of `--settle` seconds per target (replans and first writes after a start or `--load`). Loads:
  typical   POST /v1/memory_bootstrap {"project_prefix": "p05"}   (a typical project, ~5 % of the store)
  large     POST /v1/memory_bootstrap {"project_prefix": "p00"}   (the project holding the 1k-task DAG)
  mixed     70 % packs over varied fences (20 projects and sub-projects) with 1-3 terms,
            20 % single ingests, 10 % update / relate (SUPERSEDES) / tombstone of the client's own capsules
Per cell: packs/s (2xx), p50/p95/p99 of the packs, errors (non-2xx other than the shed 503s),
shed (503 `overloaded`), and CPU seconds per pack of the service's process tree and of Neo4j
(utime + stime from /proc). A target is a source tree (`name=DIR`) whose `graphsvc serve`
runs with PYTHONPATH=DIR and the environment of `--env` (e.g. GRAPHSVC_WORKERS=2).

The store (`--load`, 10k capsules from bench.dataset) is WIPED and loaded once; the mixed load
adds to it. The client speaks HTTP/1.1 over asyncio streams itself: an httpx client costs more
CPU per request than the service does and would be measured instead of it. Loopback only,
bounded in time, stops by itself. Writes bench/results/concurrency.json.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import signal
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.integration.live_server import free_port

from . import dataset
from .target import bench_database

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results" / "concurrency.json"
WARMUP_SECONDS = 2.0
CLK_TCK = os.sysconf("SC_CLK_TCK")


# ---------------------------------------------------------------- a lean HTTP/1.1 client


class Connection:
    """One keep-alive HTTP/1.1 connection: request, then headers, then a Content-Length body."""

    def __init__(self, port: int):
        self.port = port
        self.reader: asyncio.StreamReader | None = None
        self.writer: asyncio.StreamWriter | None = None
        self.retry_after: str | None = None  # the last answer's Retry-After header, if any

    async def request(self, method: str, path: str, body: Any = None) -> tuple[int, bytes]:
        if self.writer is None:
            self.reader, self.writer = await asyncio.open_connection("127.0.0.1", self.port)
        payload = json.dumps(body).encode() if body is not None else b""
        head = (f"{method} {path} HTTP/1.1\r\nHost: 127.0.0.1:{self.port}\r\nContent-Type: application/json\r\n"
                f"Content-Length: {len(payload)}\r\n\r\n").encode()
        self.writer.write(head + payload)
        assert self.reader is not None
        status_line = await self.reader.readline()
        if not status_line:
            raise ConnectionError("closed")
        status = int(status_line.split()[1])
        length, close = 0, False
        self.retry_after = None
        while True:
            line = await self.reader.readline()
            if line in (b"\r\n", b""):
                break
            name, _, value = line.decode("latin-1").partition(":")
            name = name.strip().lower()
            if name == "content-length":
                length = int(value)
            elif name == "retry-after":
                self.retry_after = value.strip()
            elif name == "connection" and value.strip().lower() == "close":
                close = True
        data = await self.reader.readexactly(length) if length else b""
        if close:
            self.close()
        return status, data

    async def timed(self, method: str, path: str, body: Any = None) -> tuple[int, bytes, float]:
        """(status, body, milliseconds); a broken connection is status 0 and is reopened next time."""
        began = time.perf_counter()
        try:
            status, data = await self.request(method, path, body)
        except (ConnectionError, asyncio.IncompleteReadError, OSError) as exc:
            self.close()
            status, data = 0, str(exc).encode()
        return status, data, (time.perf_counter() - began) * 1000

    def close(self) -> None:
        if self.writer is not None:
            self.writer.close()
        self.reader = self.writer = None


# ---------------------------------------------------------------- loads


@dataclass
class Tally:
    pack_ms: list[float] = field(default_factory=list)
    packs: int = 0
    writes: int = 0
    errors: int = 0
    shed: int = 0
    error_samples: list[str] = field(default_factory=list)


def pick_request(load: str, rng: random.Random, words: list[str], own: list[str]) -> tuple[str, str, Any]:
    if load == "typical":
        return "pack", "/v1/memory_bootstrap", {"project_prefix": "p05"}
    if load == "large":
        return "pack", "/v1/memory_bootstrap", {"project_prefix": "p00"}
    roll = rng.random()
    if roll < 0.7 or (roll >= 0.9 and len(own) < 2):
        fence_kind = rng.randrange(3)
        project = rng.choice(dataset.SUBPROJECTS)
        fence = ({"project_prefix": project.split("/")[0]}, {"project_id": project}, {"project_prefix": project})[fence_kind]
        return "pack", "/v1/memory_bootstrap", {**fence, "terms": rng.sample(words, rng.randint(1, 3))}
    if roll < 0.9:
        project = rng.choice(dataset.SUBPROJECTS)
        content = " ".join(rng.choice(words) for _ in range(rng.randint(20, 60)))
        return "ingest", "/v1/capsules", {"project_id": project, "kind": rng.choice(["fact", "decision", "task"]),
                                          "content": content}
    action = rng.randrange(3)
    if action == 0:
        return "write", "PATCH /v1/capsules/" + own[-1], {"tier": rng.choice(["active", "stale"])}
    if action == 1:
        return "write", "/v1/capsules/relate", {"add": [{"type": "SUPERSEDES", "from": own[-1], "to": own[-2]}]}
    return "write", "/v1/capsules/tombstone", {"ids": [own.pop(0)]}


async def client_loop(port: int, load: str, seed: int, words: list[str], measure_from: float, stop_at: float,
                      tally: Tally) -> None:
    rng = random.Random(seed)
    conn = Connection(port)
    own: list[str] = []
    try:
        while True:
            now = time.perf_counter()
            if now >= stop_at:
                return
            kind, target, body = pick_request(load, rng, words, own)
            method, path = ("PATCH", target.split(" ", 1)[1]) if target.startswith("PATCH ") else ("POST", target)
            began = time.perf_counter()
            status, data, took = await conn.timed(method, path, body)
            if kind == "ingest" and status == 201:
                own.extend(json.loads(data)["ids"])
            if began < measure_from:
                continue
            if status in (200, 201):
                if kind == "pack":
                    tally.packs += 1
                    tally.pack_ms.append(took)
                else:
                    tally.writes += 1
            elif status == 503 and b"overloaded" in data:
                tally.shed += 1
                await asyncio.sleep(0.005)  # a shed client backs off briefly instead of spinning
            else:
                tally.errors += 1
                if len(tally.error_samples) < 3:
                    tally.error_samples.append(f"{status} {data[:200]!r}")
                if status == 409:  # e.g. tombstoned meanwhile: forget it
                    own.clear()
    finally:
        conn.close()


# ---------------------------------------------------------------- processes and CPU


def proc_cpu(pid: int) -> float:
    """utime + stime of `pid` and its live children, in seconds."""
    total = 0.0
    pids = [pid]
    children = Path(f"/proc/{pid}/task/{pid}/children")
    if children.exists():
        pids += [int(p) for p in children.read_text().split()]
    for one in pids:
        try:
            fields = Path(f"/proc/{one}/stat").read_text().rsplit(")", 1)[1].split()
        except FileNotFoundError:
            continue
        total += (int(fields[11]) + int(fields[12])) / CLK_TCK
    return total


def neo4j_pid() -> int | None:
    """The Neo4j JVM listening on NEO4J_URI's port (a local instance's pid file names it)."""
    port = os.environ.get("NEO4J_URI", "bolt://127.0.0.1:7689").rsplit(":", 1)[1]
    for pid_file in Path.home().glob(".local/share/graphsvc/neo4j-*/run/neo4j.pid"):
        conf = pid_file.parent.parent / "conf" / "neo4j.conf"
        if conf.exists() and f":{port}\n" in conf.read_text():
            return int(pid_file.read_text().strip())
    return None


#: /readyz answers of 200 in a row (each on a fresh connection) before a served target counts as ready.
READY_IN_A_ROW = 20


class Service:
    """`graphsvc serve` from a source tree, on a free port, until stopped."""

    def __init__(self, name: str, source: str, extra_env: dict[str, str]):
        self.name, self.source, self.extra_env = name, source, extra_env
        self.port = free_port()
        self.proc: subprocess.Popen | None = None

    def __enter__(self) -> "Service":
        # BENCH_SERVICE_LOG_LEVEL=info keeps the service's info lines (e.g. when each warm-up unit's
        # plans were in) in its log, /tmp/graphsvc-bench-<name>-<port>.log.
        env = dict(os.environ, PYTHONPATH=str(Path(self.source).resolve()), GRAPHSVC_PORT=str(self.port),
                   GRAPHSVC_LOG_LEVEL=os.environ.get("BENCH_SERVICE_LOG_LEVEL", "warning"))
        env.update(self.extra_env)  # a target may set PYTHONPATH itself (e.g. an extra package dir)
        env.pop("GRAPHSVC_API_TOKEN", None)
        self.log = open(f"/tmp/graphsvc-bench-{self.name}-{self.port}.log", "wb")
        self.proc = subprocess.Popen([sys.executable, "-m", "graphsvc", "serve"], env=env, cwd=self.source,
                                     stdout=self.log, stderr=self.log)
        deadline = time.monotonic() + 180
        import httpx

        # Each worker starts up in the background and answers /readyz for itself, and any worker may
        # take a fresh connection: READY_IN_A_ROW answers of 200 in a row, so a cell does not begin
        # while one worker still answers 503 "starting up".
        in_a_row = 0
        while time.monotonic() < deadline:
            try:
                ready = httpx.get(f"http://127.0.0.1:{self.port}/readyz", timeout=5).status_code == 200
                in_a_row = in_a_row + 1 if ready else 0
                if in_a_row >= READY_IN_A_ROW:
                    return self
                if ready:
                    continue
            except httpx.TransportError:
                in_a_row = 0
            if self.proc.poll() is not None:
                break
            time.sleep(0.3)
        self.__exit__()
        raise SystemExit(f"{self.name} did not become ready; see {self.log.name}")

    def __exit__(self, *exc: Any) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()


def run_cell(service: Service, load: str, clients: int, seconds: float, words: list[str], seed: int) -> dict[str, Any]:
    tally = Tally()
    neo = neo4j_pid()

    async def main() -> tuple[float, float, float]:
        start = time.perf_counter()
        measure_from = start + WARMUP_SECONDS
        stop_at = measure_from + seconds
        tasks = [asyncio.create_task(client_loop(service.port, load, seed * 1000 + c, words, measure_from,
                                                 stop_at, tally)) for c in range(clients)]
        await asyncio.sleep(max(0.0, measure_from - time.perf_counter()))
        cpu_service, cpu_neo = proc_cpu(service.proc.pid), proc_cpu(neo) if neo else 0.0
        began = time.perf_counter()
        await asyncio.gather(*tasks)
        elapsed = time.perf_counter() - began
        return elapsed, proc_cpu(service.proc.pid) - cpu_service, (proc_cpu(neo) - cpu_neo) if neo else 0.0

    elapsed, cpu_service, cpu_neo = asyncio.run(main())
    samples = sorted(tally.pack_ms)

    def pct(q: float) -> float | None:
        return round(samples[min(len(samples) - 1, int(q * (len(samples) - 1) + 0.5))], 1) if samples else None

    packs = max(tally.packs, 1)
    return {
        "target": service.name, "load": load, "clients": clients, "seconds": round(elapsed, 2),
        "packs_per_s": round(tally.packs / elapsed, 1), "requests_per_s": round((tally.packs + tally.writes) / elapsed, 1),
        "p50_ms": pct(0.50), "p95_ms": pct(0.95), "p99_ms": pct(0.99),
        "mean_ms": round(statistics.fmean(samples), 1) if samples else None,
        "errors": tally.errors, "shed": tally.shed, "writes": tally.writes,
        "service_cpu_ms_per_pack": round(cpu_service / packs * 1000, 2),
        "neo4j_cpu_ms_per_pack": round(cpu_neo / packs * 1000, 2) if neo else None,
        "error_samples": tally.error_samples,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--clients", type=int, nargs="+", default=[1, 4, 16, 64])
    parser.add_argument("--loads", nargs="+", default=["typical", "large", "mixed"], choices=["typical", "large", "mixed"])
    parser.add_argument("--seconds", type=float, default=8.0)
    parser.add_argument("--target", action="append", default=[],
                        help="NAME=SOURCE_DIR[,ENV=VALUE...]; repeatable (default: new=.)")
    parser.add_argument("--load", action="store_true", help="wipe the store and load 10k capsules first")
    parser.add_argument("--capsules", type=int, default=10_000)
    parser.add_argument("--out", type=Path, default=RESULTS)
    parser.add_argument("--settle", type=float, default=8.0,
                        help="seconds of an unrecorded 4-client cell per load and target before the measured ones (0: none)")
    args = parser.parse_args()
    data = dataset.build(args.capsules)
    if args.load:
        db = bench_database(timeout=60.0)
        try:
            db.apply_schema()
            db.wipe_all()
            dataset.load(db, data)
        finally:
            db.close()
    targets = []
    for spec in args.target or ["new=."]:
        name, _, rest = spec.partition("=")
        source, *env_pairs = rest.split(",")
        targets.append((name, source, dict(pair.split("=", 1) for pair in env_pairs)))
    results: list[dict[str, Any]] = []
    services = [Service(name, source, env) for name, source, env in targets]
    for service in services:
        service.__enter__()
    try:
        for load in args.loads:
            # The first seconds after a start or a --load are not the steady state: Neo4j replans the
            # statements whose statistics drifted (seconds each) while the first writes land. One
            # unrecorded cell per target absorbs that, so no measured cell depends on running first.
            if args.settle > 0:
                for service in services:
                    run_cell(service, load, 4, args.settle, data.words, seed=0)
            for clients in args.clients:
                for service in services:  # interleaved: each C runs on every target back to back
                    cell = run_cell(service, load, clients, args.seconds, data.words, seed=clients)
                    results.append(cell)
                    print(f"{load:<8} C={clients:<3} {service.name:<10} {cell['packs_per_s']:7.1f} packs/s "
                          f"p50 {cell['p50_ms']} p95 {cell['p95_ms']} p99 {cell['p99_ms']} ms  err {cell['errors']} "
                          f"shed {cell['shed']}  cpu/pack svc {cell['service_cpu_ms_per_pack']} ms "
                          f"neo4j {cell['neo4j_cpu_ms_per_pack']} ms  req/s {cell['requests_per_s']}", flush=True)
    finally:
        for service in services:
            service.__exit__()
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({"machine": {"cpus": os.cpu_count(), "load_avg": os.getloadavg()},
                                    "cells": results}, indent=2) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
