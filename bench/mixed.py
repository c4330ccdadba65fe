"""What a team's agents really send, all at once, against a real `graphsvc serve`.

    .venv/bin/python -m bench.mixed [--clients 16] [--seconds 60] [--workers 2] [--wipe | --load N] [--restart-neo4j]
                                    [--idle-agents 0 256] [--rounds 1] [--target new=. --target base=DIR]
                                    [--kill-neo4j-at S | --freeze-neo4j-at S --freeze-for 30]
                                    [--mix packs | --mix recall] [--on-503 retry-after | --on-503 brief]

Each client is a closed loop over one keep-alive connection, picking per request (`--mix packs`,
the default):
  70 %  POST /v1/memory_bootstrap with a random fence (none, project_id, project_prefix, or both),
        0-6 terms (some of them two- or three-word phrases) and a random token_budget (0 ... 100,000)
  20 %  POST /v1/capsules {"items": [1-50 capsules]} (tasks, decisions, constraints, traps, facts)
  10 %  relate (BLOCKS / SUPERSEDES between the client's own capsules), update (a task done, a tier),
        tombstone
so the store grows while it is read (from empty with `--wipe`). `--mix recall` is the loop of agents
that also recall (SPEC §8-§9): of the 70 % reads, 40 points are packs as above, 20 are
POST /v1/memory_retrieve (a random fence, 1-4 terms, some of them phrases, sometimes kinds, a limit
or a token_budget) and 10 are POST /v1/memory_digest (a project or a prefix, sometimes `newest`); the
writes are as above; and 4 % of all requests are sessions (SPEC §11): each client, as agent
`bench-agent-<n>`, starts one in a random project (POST /v1/sessions, answered with the digest) or
finishes its open one with a handoff (POST /v1/sessions/{id}/finish), which supersedes its previous
handoff in that project.

A client answered 503 waits what the answer's Retry-After asks (plus up to 0.25 s of jitter) before its
next request, as agents' HTTP clients with a retry policy do. `--on-503 brief` makes it wait 50 ms
whatever it is asked: a client that hammers a service which is refusing it (the default of figures in
bench/RESULTS.md taken before this option).

`--restart-neo4j` restarts the local `bench` Neo4j before the run (a fresh JVM: no plan cached), and
the service is started after it.
`--load N` starts from a store of N capsules of bench.dataset instead (loaded and migrated before the
restart, so the service still meets a Neo4j just started).

`--idle-agents N`: before a cell's clients start, N MCP agents connect to /mcp the way the official
SDK clients do (POST initialize, POST notifications/initialized, GET /mcp for the server-to-client
stream) and then stay connected and silent for the whole cell. A list of counts runs one cell per
count, interleaved over `--rounds`, so their figures are comparable.

`--kill-neo4j-at S`: S seconds into each cell, kill -9 the local bench Neo4j and start it again; the
cell then reports when Bolt answered, the first 2xx after that, the last non-2xx, and the non-2xx
answered 10 s or more after Bolt was back (and, apart, those of them also sent 10 s or more after it).

`--freeze-neo4j-at S --freeze-for N`: S seconds into each cell, SIGSTOP the Neo4j JVM (the one behind
NEO4J_URI; the local bench instance by default) for N seconds, then SIGCONT. Meanwhile a prober GETs
/healthz every ~50 ms on a fresh connection (so any worker may answer), and each worker's thread count
(/proc/<pid>/status Threads) is sampled every 0.2 s. The cell then reports the requests begun during
the freeze: how many were not answered 503 + Retry-After (nor 2xx), how many waited past the
service's bound (GRAPHSVC_NEO4J_TIMEOUT + GRAPHSVC_QUERY_TIMEOUT, + 0.5 s for HTTP) and the longest wait; /healthz
p50/p99/max and non-200s during the freeze; each worker's maximum thread count over the cell; and
the time from SIGCONT to the first 2xx, to the last non-2xx, and the non-2xx 10 s or more after it.
"During the freeze" means in flight at any moment of it (begun before SIGCONT, answered after SIGSTOP).

Reported per cell: requests/s (2xx), the share of non-2xx, p50/p95/p99 per route, the time from the
service's start (and from the cell's start) to the first 2xx, and what the idle agents were answered.
Loopback only, bounded in time, stops by itself. Writes bench/results/mixed.json.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import signal
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from graphsvc.store.migrate import migrate

from . import dataset
from .concurrency import Connection, Service
from .target import bench_database

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results" / "mixed.json"
KINDS = ["task", "task", "decision", "constraint", "failure_pattern", "fact"]


@dataclass
class Tally:
    ms: dict[str, list[float]] = field(default_factory=dict)
    ok: int = 0
    non_2xx: dict[str, int] = field(default_factory=dict)
    first_ok: float | None = None
    samples: list[str] = field(default_factory=list)
    #: (answered at, 2xx?) of every request, for what happened around a Neo4j restart
    answers: list[tuple[float, bool]] = field(default_factory=list)
    #: (began at, answered at, status, carried Retry-After?) of every request, for a Neo4j freeze
    calls: list[tuple[float, float, int, bool]] = field(default_factory=list)
    #: (answered at, "route status code") of every non-2xx, to say what the late ones were
    failures: list[tuple[float, str]] = field(default_factory=list)


@dataclass
class Own:
    """What one client wrote, so its later writes name live capsules of its own."""

    tasks: list[str] = field(default_factory=list)
    others: list[str] = field(default_factory=list)
    #: `--mix recall`: the client's open session (SPEC §11), if any
    session: str | None = None
    agent: str = "bench-agent"


def capsule(rng: random.Random, words: list[str], project: str) -> dict[str, Any]:
    kind = rng.choice(KINDS)
    return {"project_id": project, "kind": kind,
            "content": " ".join(rng.choice(words) for _ in range(rng.randint(10, 60)))}


#: `--mix recall`: the shares of retrieves and digests among the 70 % of requests that read (the rest are packs).
RETRIEVE_SHARE, DIGEST_SHARE = 2 / 7, 1 / 7
#: `--mix recall`: the share of requests that end the client's session with a handoff, or start one.
SESSION_SHARE = 0.04
MIXES = ("packs", "recall")


def fence(rng: random.Random) -> dict[str, str]:
    """A random fence: none, a project_id, a project_prefix, or both (the id inside the prefix)."""
    project = rng.choice(dataset.SUBPROJECTS)
    which = rng.randrange(4)
    body: dict[str, str] = {}
    if which in (1, 3):
        body["project_id"] = project
    if which in (2, 3):
        body["project_prefix"] = project.split("/")[0]
    return body


def phrases(rng: random.Random, words: list[str], low: int, high: int) -> list[str]:
    """low..high terms, most of one word, some two- or three-word phrases."""
    return [" ".join(rng.sample(words, rng.choice((1, 1, 1, 2, 3)))) for _ in range(rng.randint(low, high))]


def recall_read(rng: random.Random, words: list[str]) -> tuple[str, str, str, Any] | None:
    """A retrieve or a digest for `--mix recall`, or None for a pack."""
    roll = rng.random()
    if roll < RETRIEVE_SHARE:
        body: dict[str, Any] = {**fence(rng), "terms": phrases(rng, words, 1, 4)}
        if rng.random() < 0.3:
            body["kinds"] = rng.sample(sorted(set(KINDS)), rng.randint(1, 3))
        if rng.random() < 0.5:
            body["limit"] = rng.randint(1, 50)
        if rng.random() < 0.3:
            body["token_budget"] = rng.randint(0, 20_000)
        return "retrieve", "POST", "/v1/memory_retrieve", body
    if roll < RETRIEVE_SHARE + DIGEST_SHARE:
        project = rng.choice(dataset.SUBPROJECTS)
        body = {"project_id": project} if rng.random() < 0.5 else {"project_prefix": project.split("/")[0]}
        if rng.random() < 0.5:
            body["newest"] = rng.randint(0, 20)
        return "digest", "POST", "/v1/memory_digest", body
    return None


def session_step(rng: random.Random, words: list[str], own: Own) -> tuple[str, str, str, Any]:
    """Finish the open session with a handoff, or start one in a random project (its digest comes back)."""
    if own.session is not None:
        body = {"handoff": " ".join(rng.choice(words) for _ in range(rng.randint(10, 40))),
                "next_steps": [" ".join(rng.sample(words, 4)) for _ in range(rng.randint(0, 3))]}
        return "session_finish", "POST", f"/v1/sessions/{own.session}/finish", body
    return "session_start", "POST", "/v1/sessions", {"agent": own.agent, "project_id": rng.choice(dataset.SUBPROJECTS)}


def pick(rng: random.Random, words: list[str], own: Own, mix: str = "packs") -> tuple[str, str, str, Any]:
    """(route, method, path, body) of one request of the mix."""
    if mix == "recall" and rng.random() < SESSION_SHARE:
        return session_step(rng, words, own)
    roll = rng.random()
    if roll < 0.7 or (roll >= 0.9 and len(own.tasks) + len(own.others) < 4):
        recall = recall_read(rng, words) if mix == "recall" else None
        if recall is not None:
            return recall
        body: dict[str, Any] = fence(rng)
        terms = phrases(rng, words, 0, 6)
        if terms:
            body["terms"] = terms
        if rng.random() < 0.8:
            body["token_budget"] = rng.choice((0, rng.randint(1, 3000), rng.randint(1, 100_000)))
        return "pack", "POST", "/v1/memory_bootstrap", body
    if roll < 0.9:
        project = rng.choice(dataset.SUBPROJECTS)
        return "ingest", "POST", "/v1/capsules", {"items": [capsule(rng, words, project)
                                                            for _ in range(rng.randint(1, 50))]}
    action = rng.randrange(3)
    if action == 0 and len(own.tasks) >= 2:
        a, b = rng.sample(own.tasks, 2)
        return "relate", "POST", "/v1/capsules/relate", {"add": [{"type": "BLOCKS", "from": a, "to": b}]}
    if action == 1:
        pool = own.tasks or own.others
        target = rng.choice(pool)
        change = {"status": "done"} if target in own.tasks else {"tier": rng.choice(("active", "stale"))}
        return "update", "PATCH", f"/v1/capsules/{target}", change
    pool = own.others or own.tasks
    victim = pool.pop(rng.randrange(len(pool)))
    return "tombstone", "POST", "/v1/capsules/tombstone", {"ids": [victim]}


async def client(port: int, seed: int, words: list[str], stop_at: float, tally: Tally, started: float,
                 mix: str = "packs", on_503: str = "retry-after") -> None:
    rng = random.Random(seed)
    conn = Connection(port)
    own = Own(agent=f"bench-agent-{seed}")
    try:
        while time.perf_counter() < stop_at:
            route, method, path, body = pick(rng, words, own, mix)
            began = time.perf_counter()
            status, data, took = await conn.timed(method, path, body)
            tally.answers.append((time.perf_counter(), 200 <= status < 300))
            tally.calls.append((began, time.perf_counter(), status, conn.retry_after is not None))
            if 200 <= status < 300:
                tally.ok += 1
                tally.ms.setdefault(route, []).append(took)
                if tally.first_ok is None:
                    tally.first_ok = time.perf_counter() - started
                if route == "session_start":
                    own.session = json.loads(data)["session_id"]
                if route == "session_finish":
                    own.session = None
                if route == "ingest":
                    items = body["items"]
                    for item, cap in zip(items, json.loads(data)["ids"]):
                        (own.tasks if item["kind"] == "task" else own.others).append(cap)
            else:
                tally.non_2xx[route] = tally.non_2xx.get(route, 0) + 1
                if route == "session_finish":  # never finish it again with another body (a 409)
                    own.session = None
                tally.failures.append((time.perf_counter(), f"{route} {status} {error_code(data)}"))
                if len(tally.samples) < 5:
                    tally.samples.append(f"{route} {status} {data[:160]!r}")
                if status == 503:
                    await asyncio.sleep(min(pause_after_503(conn.retry_after, on_503, rng),
                                            max(0.0, stop_at - time.perf_counter())))
                if status in (404, 409, 422):  # its capsule was tombstoned or changed meanwhile
                    own.tasks.clear()
                    own.others.clear()
    finally:
        conn.close()


def pause_after_503(retry_after: str | None, on_503: str, rng: random.Random) -> float:
    """How long a refused client waits before its next request. `retry-after`: what the answer's
    Retry-After asks (seconds), plus up to a quarter second of jitter so that clients refused together
    do not come back in step, as an HTTP client with a retry policy does; `brief`: 50 ms whatever it
    asks, a client that hammers."""
    if on_503 == "retry-after" and retry_after is not None:
        try:
            return max(0.0, float(retry_after)) + rng.uniform(0.0, 0.25)
        except ValueError:  # an HTTP date: the service never sends one
            pass
    return 0.05


async def idle_agent(port: int, ready: asyncio.Event, stop_at: float, seen: dict[str, int]) -> None:
    """One MCP agent that connects like the SDK clients and then idles, holding what it was given."""
    headers = ("Accept: application/json, text/event-stream\r\nContent-Type: application/json\r\n"
               "MCP-Protocol-Version: 2025-11-25\r\n")
    writers = []
    try:
        for message in ({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
                "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "idle", "version": "1"}}},
                {"jsonrpc": "2.0", "method": "notifications/initialized"}):
            conn = Connection(port)
            await conn.request("POST", "/mcp", message)
            conn.close()
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writers.append(writer)
        writer.write(f"GET /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n{headers}\r\n".encode())
        status = int((await reader.readline()).split()[1])
        seen[str(status)] = seen.get(str(status), 0) + 1
    except (ConnectionError, OSError, IndexError, ValueError):
        seen["failed"] = seen.get("failed", 0) + 1
    finally:
        ready.set()
    # Idle: hold the connection (a stream the server granted, or the keep-alive after a 405) until the end.
    await asyncio.sleep(max(0.0, stop_at - time.perf_counter()))
    for writer in writers:
        writer.close()


def error_code(data: bytes) -> str:
    """The error's code and the start of its message ("neo4j_unavailable: Neo4j is back and…")."""
    try:
        error = json.loads(data)["error"]
        return f"{error['code']}: {str(error.get('message', ''))[:48]}"
    except (ValueError, KeyError, TypeError):
        return "?"


def late(failures: list[tuple[float, str]], since: float) -> dict[str, int]:
    """What the non-2xx answered `since` or later were, by route, status and error code."""
    seen: dict[str, int] = {}
    for at, what in failures:
        if at >= since:
            seen[what] = seen.get(what, 0) + 1
    return dict(sorted(seen.items()))


def pct(samples: list[float], q: float) -> float | None:
    if not samples:
        return None
    ordered = sorted(samples)
    return round(ordered[min(len(ordered) - 1, int(q * (len(ordered) - 1) + 0.5))], 1)


async def kill_and_restart(after: float, restarted: dict[str, float]) -> None:
    """kill -9 the local bench Neo4j `after` seconds in, start it again, note when Bolt answers."""
    from graphsvc.neo4j_local import LocalNeo4j

    from .concurrency import neo4j_pid

    await asyncio.sleep(after)
    pid = neo4j_pid()
    if pid is None:
        raise SystemExit("--kill-neo4j-at: no local bench Neo4j pid found")
    restarted["killed"] = time.perf_counter()
    os.kill(pid, signal.SIGKILL)
    while Path(f"/proc/{pid}").exists():  # until the JVM is gone, its launcher still reports it running
        await asyncio.sleep(0.05)
    await asyncio.to_thread(LocalNeo4j.named("bench").start)  # returns once Bolt answers a query
    restarted["bolt"] = time.perf_counter()


async def freeze_and_thaw(after: float, freeze_for: float, marks: dict[str, float]) -> None:
    """SIGSTOP the Neo4j JVM behind NEO4J_URI `after` seconds in, SIGCONT it `freeze_for` s later."""
    from .concurrency import neo4j_pid

    await asyncio.sleep(after)
    pid = neo4j_pid()
    if pid is None:
        raise SystemExit("--freeze-neo4j-at: no local Neo4j pid found for NEO4J_URI")
    marks["frozen"] = time.perf_counter()
    os.kill(pid, signal.SIGSTOP)
    try:
        await asyncio.sleep(freeze_for)
    finally:  # never leave the JVM stopped, whatever happens to the bench
        os.kill(pid, signal.SIGCONT)
        marks["thawed"] = time.perf_counter()


async def probe_healthz(port: int, stop_at: float, probes: list[tuple[float, float, int]]) -> None:
    """GET /healthz every ~50 ms on a fresh connection: (began at, ms, status) of each."""
    while time.perf_counter() < stop_at:
        conn = Connection(port)
        began = time.perf_counter()
        status, _, took = await conn.timed("GET", "/healthz")
        conn.close()
        probes.append((began, took, status))
        await asyncio.sleep(max(0.0, 0.05 - (time.perf_counter() - began)))


def worker_pids(supervisor: int) -> list[int]:
    """uvicorn's worker processes (not multiprocessing's resource tracker); the process itself with one worker."""
    path = Path(f"/proc/{supervisor}/task/{supervisor}/children")
    found = [int(p) for p in path.read_text().split()] if path.exists() else []
    workers = []
    for child in found:
        try:
            cmdline = Path(f"/proc/{child}/cmdline").read_bytes()
        except OSError:
            continue
        if b"spawn_main" in cmdline and b"resource_tracker" not in cmdline:
            workers.append(child)
    return workers or [supervisor]


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds a process has used so far (/proc/<pid>/stat), 0 once it is gone."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def machine_busy_seconds() -> float:
    """CPU seconds every core spent not idle since boot (/proc/stat), summed over the cores."""
    values = [int(v) for v in Path("/proc/stat").read_text().splitlines()[0].split()[1:]]
    idle = values[3] + values[4]  # idle + iowait
    return (sum(values[:8]) - idle) / os.sysconf("SC_CLK_TCK")


class CpuMeter:
    """Where a cell's CPU went: the machine, the Neo4j JVM, the service's workers, this load generator.

    Throughput on a small machine ends where the CPU does, so the cell reports how busy the cores
    were and the CPU milliseconds each request cost per process: that says whether requests/s is
    bounded by the CPU (and by which process) or by waiting (locks, timeouts)."""

    def __init__(self, supervisor: int | None) -> None:
        from .concurrency import neo4j_pid

        self.pids = {"neo4j": [p for p in [neo4j_pid()] if p is not None],
                     "service": worker_pids(supervisor) if supervisor is not None else [],
                     "load": [os.getpid()]}
        self.began = time.perf_counter()
        self.busy = machine_busy_seconds()
        self.used = {name: sum(cpu_seconds(p) for p in pids) for name, pids in self.pids.items()}

    def report(self, requests: int) -> dict[str, Any]:
        wall = time.perf_counter() - self.began
        cores = os.cpu_count() or 1
        # A process that ended meanwhile (a killed Neo4j) has no total to read: None.
        used = {name: (sum(cpu_seconds(p) for p in pids) - self.used[name]
                       if all(Path(f"/proc/{p}").exists() for p in pids) else None)
                for name, pids in self.pids.items()}
        return {"cores_busy_share": round((machine_busy_seconds() - self.busy) / (wall * cores), 3),
                "cpu_ms_per_request": {name: None if seconds is None else round(1000 * seconds / max(1, requests), 2)
                                       for name, seconds in used.items()}}


async def sample_threads(supervisor: int, stop_at: float, most: dict[int, int]) -> None:
    """Each worker's highest thread count (/proc/<pid>/status Threads), sampled every 0.2 s."""
    while time.perf_counter() < stop_at:
        for pid in worker_pids(supervisor):
            try:
                status = Path(f"/proc/{pid}/status").read_text()
            except OSError:
                continue
            threads = int(next(line.split()[1] for line in status.splitlines() if line.startswith("Threads:")))
            most[pid] = max(most.get(pid, 0), threads)
        await asyncio.sleep(0.2)


#: What loopback HTTP and a busy machine add to the service's bound before a wait counts as past it.
BOUND_SLACK_S = 0.5


def request_bound() -> float:
    """The service's wall-clock bound on one call: GRAPHSVC_NEO4J_TIMEOUT + GRAPHSVC_QUERY_TIMEOUT."""
    return float(os.environ.get("GRAPHSVC_NEO4J_TIMEOUT", "2")) + float(os.environ.get("GRAPHSVC_QUERY_TIMEOUT", "5"))


def freeze_report(marks: dict[str, float], tally: Tally, probes: list[tuple[float, float, int]],
                  threads: dict[int, int]) -> dict[str, Any]:
    frozen, thawed, bound = marks["frozen"], marks["thawed"], request_bound()
    during = [c for c in tally.calls if c[1] > frozen and c[0] < thawed]  # in flight at any time of the freeze
    statuses: dict[str, int] = {}
    for _, _, status, _ in during:
        statuses[str(status)] = statuses.get(str(status), 0) + 1
    health = [(took, status) for began, took, status in probes if frozen <= began < thawed]
    after = [(answered - thawed, 200 <= status < 300) for _, answered, status, _ in tally.calls if answered > thawed]
    last_bad = max((t for t, ok in after if not ok), default=None)
    return {
        "frozen_s": round(thawed - frozen, 1), "bound_s": bound,
        "requests_in_freeze": len(during), "statuses_in_freeze": statuses,
        "not_503_with_retry_after_nor_2xx": sum(1 for c in during
                                                 if not (c[2] == 503 and c[3]) and not 200 <= c[2] < 300),
        "over_bound": sum(1 for c in during if c[1] - c[0] > bound + BOUND_SLACK_S), "bound_slack_s": BOUND_SLACK_S,
        "longest_wait_s": round(max((c[1] - c[0] for c in during), default=0.0), 2),
        "healthz_in_freeze": {"n": len(health), "non_200": sum(1 for _, status in health if status != 200),
                              "p50_ms": pct([t for t, _ in health], .5), "p99_ms": pct([t for t, _ in health], .99),
                              "max_ms": round(max((t for t, _ in health), default=0.0), 1)},
        "worker_threads_max": {str(pid): n for pid, n in sorted(threads.items())},
        "first_2xx_after_sigcont_s": next((round(t, 2) for t, ok in sorted(after) if ok), None),
        "last_non_2xx_after_sigcont_s": None if last_bad is None else round(last_bad, 2),
        "non_2xx_from_10s_after_sigcont": sum(1 for t, ok in after if t >= 10 and not ok),
        "non_2xx_from_10s_after_sigcont_by_kind": late(tally.failures, thawed + 10),
    }


def run_cell(service: Service, clients: int, seconds: float, idle: int, words: list[str], seed: int,
             kill_at: float | None = None, freeze_at: float | None = None, freeze_for: float = 30.0,
             mix: str = "packs", on_503: str = "retry-after") -> dict[str, Any]:
    tally = Tally()
    seen: dict[str, int] = {}
    restarted: dict[str, float] = {}
    frozen: dict[str, float] = {}
    probes: list[tuple[float, float, int]] = []
    threads: dict[int, int] = {}
    meter: list[CpuMeter] = []
    cpu: dict[str, Any] = {}

    async def main() -> float:
        stop_at = time.perf_counter() + seconds + 30  # the idle agents outlive the clients
        events = [asyncio.Event() for _ in range(idle)]
        agents = [asyncio.create_task(idle_agent(service.port, event, stop_at, seen)) for event in events]
        for event in events:
            await event.wait()
        meter.append(CpuMeter(service.proc.pid if service.proc is not None else None))
        started = time.perf_counter()
        faults = [kill_and_restart(kill_at, restarted)] if kill_at is not None else []
        if freeze_at is not None:
            assert service.proc is not None
            faults += [freeze_and_thaw(freeze_at, freeze_for, frozen),
                       probe_healthz(service.port, started + seconds, probes),
                       sample_threads(service.proc.pid, started + seconds, threads)]
        await asyncio.gather(*[client(service.port, seed * 1000 + c, words, started + seconds, tally, started, mix,
                                      on_503)
                               for c in range(clients)], *faults)
        elapsed = time.perf_counter() - started
        cpu.update(meter[0].report(tally.ok + sum(tally.non_2xx.values())))
        for agent in agents:
            agent.cancel()
        await asyncio.gather(*agents, return_exceptions=True)
        return elapsed

    elapsed = asyncio.run(main())
    failed = sum(tally.non_2xx.values())
    restart: dict[str, Any] = {}
    if "bolt" in restarted:
        bolt = restarted["bolt"]
        after = [(at - bolt, ok) for at, ok in tally.answers if at > bolt]
        restart = {"bolt_back_after_kill_s": round(bolt - restarted["killed"], 1),
                   "first_2xx_after_bolt_s": next((round(t, 2) for t, ok in after if ok), None),
                   "last_non_2xx_after_bolt_s": max((round(t, 2) for t, ok in after if not ok), default=None),
                   "non_2xx_from_10s_after_bolt": sum(1 for t, ok in after if t >= 10 and not ok),
                   # The same by when the request was sent: a request sent before the 10 s mark
                   # and refused after it (it waited its bound for the plans) is not counted here.
                   "non_2xx_sent_from_10s_after_bolt": sum(
                       1 for began, _end, status, _ in tally.calls if began - bolt >= 10 and not 200 <= status < 300),
                   "non_2xx_from_10s_after_bolt_by_kind": late(tally.failures, bolt + 10)}
    return {
        "target": service.name, "mix": mix, "on_503": on_503, "clients": clients, "idle_agents": idle, "seconds": round(elapsed, 1),
        "requests_per_s": round(tally.ok / elapsed, 1), "requests": tally.ok + failed,
        "non_2xx": failed, "non_2xx_share": round(failed / max(1, tally.ok + failed), 4),
        "non_2xx_by_route": tally.non_2xx,
        "first_2xx_s": None if tally.first_ok is None else round(tally.first_ok, 2),
        "routes": {route: {"n": len(ms), "p50_ms": pct(ms, .5), "p95_ms": pct(ms, .95), "p99_ms": pct(ms, .99)}
                   for route, ms in sorted(tally.ms.items())},
        "idle_agents_answered": seen, "samples": tally.samples, "cpu": cpu, "neo4j_restart": restart,
        "neo4j_freeze": freeze_report(frozen, tally, probes, threads) if "thawed" in frozen else {},
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--clients", type=int, default=16)
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--idle-agents", type=int, nargs="+", default=[0])
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--wipe", action="store_true", help="start from an empty store")
    parser.add_argument("--load", type=int, default=0, metavar="N",
                        help="wipe, then load N capsules of bench.dataset before the service starts")
    parser.add_argument("--restart-neo4j", action="store_true", help="restart the local bench Neo4j first")
    parser.add_argument("--target", action="append", default=[], help="NAME=SOURCE_DIR; repeatable (default new=.)")
    parser.add_argument("--kill-neo4j-at", type=float, default=None,
                        help="seconds into each cell to kill -9 the local bench Neo4j and start it again")
    parser.add_argument("--freeze-neo4j-at", type=float, default=None,
                        help="seconds into each cell to SIGSTOP the Neo4j JVM (SIGCONT after --freeze-for)")
    parser.add_argument("--freeze-for", type=float, default=30.0, help="seconds the Neo4j JVM stays stopped")
    parser.add_argument("--mix", choices=MIXES, default="packs",
                        help="packs: the reads are all packs; recall: packs, retrieves and digests")
    parser.add_argument("--on-503", choices=("retry-after", "brief"), default="retry-after",
                        help="retry-after: a refused client waits what Retry-After asks (as agents' HTTP "
                        "clients do); brief: it waits 50 ms whatever it asks")
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args()
    if args.kill_neo4j_at is not None and args.freeze_neo4j_at is not None:
        parser.error("--kill-neo4j-at and --freeze-neo4j-at: one fault per run")
    if args.freeze_neo4j_at is not None and args.freeze_neo4j_at + args.freeze_for >= args.seconds:
        parser.error("--freeze-neo4j-at + --freeze-for must end before --seconds, to see the recovery")
    words = dataset.vocabulary(random.Random(dataset.SEED))
    if not os.environ.get("NEO4J_URI"):  # the local bench instance; the service is pointed at it too
        from graphsvc.neo4j_local import LocalNeo4j

        local = LocalNeo4j.named("bench")
        local.start()
        os.environ.update(NEO4J_URI=local.bolt_uri, NEO4J_USER="neo4j", NEO4J_PASSWORD=local.password)
    elif args.restart_neo4j:
        raise SystemExit("--restart-neo4j restarts the local bench instance only; unset NEO4J_URI")
    db = bench_database(timeout=60.0)
    try:
        db.apply_schema()
        if args.wipe or args.load:
            db.wipe_all()
        if args.load:
            began = time.perf_counter()
            dataset.load(db, dataset.build(args.load))
            migrate(db)  # the bench loader writes capsules as schema v1 did: bring them to the current schema
            print(f"loaded {args.load:,} capsules in {time.perf_counter() - began:.0f} s", flush=True)
    finally:
        db.close()
    if args.restart_neo4j:  # after the store is prepared: the service meets a Neo4j just started
        local.stop()
        local.start()
    targets = [(spec.partition("=")[0], spec.partition("=")[2]) for spec in args.target or ["new=."]]
    results = []
    for name, source in targets:
        began = time.perf_counter()
        with Service(name, source, {"GRAPHSVC_WORKERS": str(args.workers)}) as service:
            ready_s = time.perf_counter() - began
            print(f"{name}: /readyz 200 after {ready_s:.1f} s", flush=True)
            for round_ in range(args.rounds):
                for idle in args.idle_agents:
                    cell = run_cell(service, args.clients, args.seconds, idle, words, seed=round_ * 7 + idle,
                                    kill_at=args.kill_neo4j_at, freeze_at=args.freeze_neo4j_at,
                                    freeze_for=args.freeze_for, mix=args.mix, on_503=args.on_503)
                    cell.update(round=round_, ready_s=round(ready_s, 1))
                    results.append(cell)
                    routes = "  ".join(f"{r} p50/p95/p99 {v['p50_ms']}/{v['p95_ms']}/{v['p99_ms']}"
                                       for r, v in cell["routes"].items())
                    print(f"{name} round {round_} idle {idle:>4}: {cell['requests_per_s']:6.1f} req/s, non-2xx "
                          f"{cell['non_2xx']} of {cell['requests']} ({cell['non_2xx_share']:.1%}), first 2xx "
                          f"{cell['first_2xx_s']} s; idle answered {cell['idle_agents_answered']}\n    {routes}",
                          flush=True)
                    print(f"    CPU: {cell['cpu']}", flush=True)
                    if cell["neo4j_restart"]:
                        print(f"    Neo4j restart: {cell['neo4j_restart']}", flush=True)
                    if cell["neo4j_freeze"]:
                        print(f"    Neo4j freeze: {cell['neo4j_freeze']}", flush=True)
                    for sample in cell["samples"][:2]:
                        print(f"    e.g. {sample}", flush=True)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({"machine": {"cpus": os.cpu_count()}, "cells": results}, indent=2) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
