"""memory_bootstrap side by side with nmemory on the same small store, in one interleaved run.

    python -m bench.vs_nmemory [--size 1000] [--rounds 10] [--calls 50] [--warmup 20]
                               [--nmemory /work/nmemory/target/release/nmemory] [--profile]

Builds ONE deterministic capsule set (`--size`, default 1000; constraints, decisions, failure
patterns, tasks (each on a BLOCKS edge), facts, docs, procedures; three projects, one of them with
a sub-project; a few expired constraints and decisions, a few superseded decisions) and loads the
same capsules, in the same order, into:

  nmemory   a fresh store file in a temp dir, through its own MCP tools over stdio
            (memory_ingest in batches, then memory_relate per edge);
  graphsvc  the Neo4j a bench may WIPE (NEO4J_URI / NEO4J_USER / NEO4J_PASSWORD, else the local
            `bench` instance), wiped, then GraphService.ingest in batches and GraphService.relate.

Then times `memory_bootstrap` (default token budget) for four request shapes, no fence or
`project_id`, each without and with two terms, against three targets:

  nmemory        the nmemory binary over MCP stdio: one long-lived client session, call_tool per request
  graphsvc-mcp   `python -m graphsvc mcp` over MCP stdio, the same client code
  graphsvc-http  `graphsvc serve` (one worker) on a free port: one keep-alive httpx client,
                 POST /v1/memory_bootstrap

Interleaved: after untimed warm-up calls (`--warmup` per target and shape), each of `--rounds`
rounds gives every target a batch of `--calls` sequential calls per shape, the targets' order
rotating from round to round, so machine noise falls on all of them alike. Reported per shape and
target: p50 / p95 / p99 in ms and graphsvc's p50 over nmemory's; also each target's section
totals of the first pack of a shape (the same store must give the same totals). Writes
bench/results/vs_nmemory.json.

`--profile`: afterwards, runs GraphService.bootstrap in-process against the same store under
cProfile (`--calls` calls of each shape) and prints the top 25 functions by cumulative and by own
time: where a small pack's fixed cost goes. `--rounds 0 --profile` loads graphsvc and profiles only.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import json
import os
import platform
import pstats
import random
import shlex
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from io import StringIO
from pathlib import Path
from typing import Any

import httpx

from graphsvc.clock import system_clock
from graphsvc.neo4j_local import LocalNeo4j
from graphsvc.service import GraphService
from graphsvc.store.db import Database, redact_uri

from . import dataset
from .concurrency import Service

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
RESULTS = HERE / "results" / "vs_nmemory.json"
DEFAULT_NMEMORY = os.environ.get("NMEMORY_BIN", "/work/nmemory/target/release/nmemory")
PROJECTS = ["alpha", "alpha/api", "beta", "gamma"]
FENCED = "alpha"  # the project_id of the fenced shapes: about a third of the store
KINDS = (["constraint"] * 3 + ["decision"] * 8 + ["failure_pattern"] * 4 + ["task"] * 10
         + ["fact"] * 30 + ["doc"] * 15 + ["procedure"] * 10)
#: Ingest calls carry at most this many capsules (graphsvc takes up to 1000; smaller calls keep
#: nmemory's MCP messages modest).
BATCH = 250
TARGETS = ["nmemory", "graphsvc-mcp", "graphsvc-http"]
TOTALS = ("constraints_total", "ready_total", "decisions_total", "traps_total")


# ---------------------------------------------------------------- the dataset


@dataclass
class Item:
    """One capsule of the dataset, with its edges to earlier items (by index)."""

    project_id: str
    kind: str
    content: str
    expired: bool = False
    blocked_by: list[int] = field(default_factory=list)
    supersedes: int | None = None


def build(size: int, seed: int = dataset.SEED) -> list[Item]:
    """`size` capsules, every one's content unique (nmemory collapses equal contents into one)."""
    rng = random.Random(seed)
    words = dataset.vocabulary(rng)
    items: list[Item] = []
    tasks: dict[str, list[int]] = {}
    decisions: dict[str, list[int]] = {}
    for index in range(size):
        kind, project = rng.choice(KINDS), rng.choice(PROJECTS)
        text = [rng.choice(words) for _ in range(rng.randint(20, 60))]
        headline = " ".join(text[:8]).capitalize()
        item = Item(project, kind, f"{headline}\n{' '.join(text[8:])} n{index}")
        if kind in ("constraint", "decision") and rng.random() < 0.05:
            item.expired = True
        if kind == "task":
            earlier = tasks.setdefault(project, [])
            if earlier and rng.random() < 0.5:
                item.blocked_by = sorted(set(rng.sample(earlier[-30:], min(len(earlier[-30:]), rng.randint(1, 2)))))
            earlier.append(index)
        if kind == "decision":
            earlier = decisions.setdefault(project, [])
            if earlier and rng.random() < 0.05:
                item.supersedes = rng.choice(earlier)
            earlier.append(index)
        items.append(item)
    # nmemory's ready set holds only tasks that take part in a BLOCKS edge, graphsvc's every open
    # task without a live blocker: a task on no edge would be ready in one and absent from the other.
    # Each such task blocks the next task of its project (the last one is blocked by the one before).
    linked = {index for kind, a, b in edges(items) if kind == "BLOCKS" for index in (a, b)}
    for project, indexes in tasks.items():
        for position, index in enumerate(indexes):
            if index in linked or len(indexes) < 2:
                continue
            if position + 1 < len(indexes):
                later = items[indexes[position + 1]]
                later.blocked_by = sorted(set(later.blocked_by) | {index})
                linked |= {index, indexes[position + 1]}
            else:
                items[index].blocked_by = [indexes[position - 1]]
                linked |= {index, indexes[position - 1]}
    return items


def edges(items: list[Item]) -> list[tuple[str, int, int]]:
    """(type, from, to) by item index: BLOCKS from the blocker to the blocked, SUPERSEDES from the new."""
    out: list[tuple[str, int, int]] = []
    for index, item in enumerate(items):
        out += [("BLOCKS", blocker, index) for blocker in item.blocked_by]
        if item.supersedes is not None:
            out.append(("SUPERSEDES", index, item.supersedes))
    return out


def shapes(items: list[Item], seed: int = dataset.SEED) -> dict[str, dict[str, Any]]:
    """The timed requests: two terms that occur in the store (drawn from two capsules' headlines)."""
    rng = random.Random(seed + 1)
    picked = rng.sample(items, 2)
    terms = [item.content.split()[1].lower() for item in picked]
    return {
        "store": {},
        "store+terms": {"terms": terms},
        "project": {"project_id": FENCED},
        "project+terms": {"project_id": FENCED, "terms": terms},
    }


# ---------------------------------------------------------------- loading


def neo4j_target() -> dict[str, str]:
    """The Neo4j settings a bench may wipe, as environment variables for the graphsvc processes."""
    if os.environ.get("NEO4J_URI"):
        return {key: os.environ[key] for key in ("NEO4J_URI", "NEO4J_USER", "NEO4J_PASSWORD", "NEO4J_DATABASE")
                if key in os.environ}
    local = LocalNeo4j.named("bench")
    local.start()
    return {"NEO4J_URI": local.bolt_uri, "NEO4J_USER": "neo4j", "NEO4J_PASSWORD": local.password}


def load_graphsvc(service: GraphService, items: list[Item]) -> None:
    now = service.clock()
    ids: list[str] = []
    for start in range(0, len(items), BATCH):
        batch = [{"project_id": item.project_id, "kind": item.kind, "content": item.content}
                 | ({"valid_to": (now - timedelta(days=1)).isoformat()} if item.expired else {})
                 for item in items[start:start + BATCH]]
        ids += service.ingest({"items": batch})["ids"]
    add = [{"type": kind, "from": ids[a], "to": ids[b]} for kind, a, b in edges(items)]
    for start in range(0, len(add), BATCH):
        service.relate({"add": add[start:start + BATCH]})


def tool_json(result: Any, what: str) -> Any:
    if result.is_error:
        raise SystemExit(f"{what} failed: {result.content[0].text if result.content else result}")
    return json.loads(result.content[0].text)


async def load_nmemory(session: Any, items: list[Item]) -> list[str]:
    """Ingest the items in order, then relate their edges; nmemory's ids, by item index."""
    now = datetime.now(timezone.utc).replace(microsecond=0)
    ids: list[str] = []
    for start in range(0, len(items), BATCH):
        batch = []
        for index, item in enumerate(items[start:start + BATCH], start=start):
            row = {"content": item.content, "source": "bench.vs_nmemory", "anchor": f"doc-bench-{index}",
                   "project_id": item.project_id, "kind": item.kind}
            if item.expired:  # nmemory needs valid_to after valid_from, which defaults to now
                row |= {"valid_from": (now - timedelta(days=30)).isoformat().replace("+00:00", "Z"),
                        "valid_to": (now - timedelta(days=1)).isoformat().replace("+00:00", "Z")}
            batch.append(row)
        answer = tool_json(await session.call_tool("memory_ingest", {"items": batch}), "nmemory memory_ingest")
        if answer.get("captured") != len(batch):
            raise SystemExit(f"nmemory captured {answer.get('captured')} of {len(batch)}: {answer}")
        ids += [outcome["id"] for outcome in answer["outcomes"]]
    for kind, a, b in edges(items):
        tool_json(await session.call_tool("memory_relate", {"kind": kind.lower(), "from": ids[a], "to": ids[b]}),
                  "nmemory memory_relate")
    return ids


# ---------------------------------------------------------------- timing


def percentile(samples: list[float], fraction: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(round(fraction * (len(ordered) - 1))))]


def totals(pack: dict[str, Any]) -> dict[str, Any]:
    """The section totals of a pack, from either product (nmemory nests ready_total in `ready`)."""
    ready = pack.get("ready")
    found = {key: pack.get(key) for key in TOTALS}
    if found["ready_total"] is None and isinstance(ready, dict):
        found["ready_total"] = ready.get("ready_total", ready.get("total"))
    return found


class McpTarget:
    """One long-lived MCP stdio client session; `call` times one call of `tool` (memory_bootstrap)."""

    def __init__(self, session: Any, tool: str = "memory_bootstrap"):
        self.session = session
        self.tool = tool

    async def call(self, body: dict[str, Any]) -> tuple[float, Any]:
        began = time.perf_counter()
        result = await self.session.call_tool(self.tool, body)
        took = (time.perf_counter() - began) * 1000
        if result.is_error:
            raise SystemExit(f"{self.tool} {body} failed: {result.content[0].text}")
        return took, result


class HttpTarget:
    def __init__(self, client: httpx.Client, route: str = "/v1/memory_bootstrap"):
        self.client = client
        self.route = route

    async def call(self, body: dict[str, Any]) -> tuple[float, Any]:
        # A blocking call on the event loop on purpose: nothing else runs while a request is timed.
        began = time.perf_counter()
        response = self.client.post(self.route, json=body)
        took = (time.perf_counter() - began) * 1000
        if response.status_code != 200:
            raise SystemExit(f"POST {self.route} {body}: {response.status_code} {response.text[:300]}")
        return took, response


class GetTarget:
    """A GET of a route that answers without the capsules (`/healthz`: HTTP alone; `/readyz`: HTTP, a
    worker thread and one Neo4j round trip), timed like HttpTarget beside the real calls: what any
    answer costs over this transport before its own work. The body is not sent."""

    def __init__(self, client: httpx.Client, route: str):
        self.client = client
        self.route = route

    async def call(self, body: dict[str, Any]) -> tuple[float, Any]:
        began = time.perf_counter()
        response = self.client.get(self.route)
        took = (time.perf_counter() - began) * 1000
        if response.status_code != 200:
            raise SystemExit(f"GET {self.route}: {response.status_code} {response.text[:300]}")
        return took, response


def pack_of(answer: Any) -> dict[str, Any]:
    return answer.json() if isinstance(answer, httpx.Response) else json.loads(answer.content[0].text)


def pack_summary(pack: dict[str, Any]) -> dict[str, Any]:
    return {"totals": totals(pack), "bytes": len(json.dumps(pack))}


async def interleave(targets: dict[str, Any], requests: dict[str, dict[str, Any]], rounds: int, calls: int,
                     warmup: int, summary: Any = pack_summary) -> dict[str, Any]:
    """`summary(answer)`: what the report keeps of each target's first answer to a shape."""
    samples = {shape: {name: [] for name in targets} for shape in requests}
    first: dict[str, dict[str, Any]] = {shape: {} for shape in requests}
    for shape, body in requests.items():
        for name, target in targets.items():
            _, answer = await target.call(body)
            first[shape][name] = summary(pack_of(answer))
            for _ in range(warmup):
                await target.call(body)
    names = list(targets)
    for number in range(rounds):
        order = names[number % len(names):] + names[:number % len(names)]
        for shape, body in requests.items():
            for name in order:
                for _ in range(calls):
                    took, _ = await targets[name].call(body)
                    samples[shape][name].append(took)
        print(f"round {number + 1}/{rounds} done", flush=True)
    report: dict[str, Any] = {}
    for shape in requests:
        rows: dict[str, Any] = {}
        for name in names:
            times = samples[shape][name]
            rows[name] = {"p50_ms": round(percentile(times, 0.5), 2), "p95_ms": round(percentile(times, 0.95), 2),
                          "p99_ms": round(percentile(times, 0.99), 2), "calls": len(times), **first[shape][name]}
        for name in names:
            if name != "nmemory" and "nmemory" in rows:
                rows[name]["p50_vs_nmemory"] = round(rows[name]["p50_ms"] / rows["nmemory"]["p50_ms"], 2)
        report[shape] = rows
    return report


def print_report(report: dict[str, Any], requests: dict[str, dict[str, Any]]) -> None:
    print(f"\n{'shape':<14} {'target':<14} {'p50 ms':>8} {'p95 ms':>8} {'p99 ms':>8} {'p50/nmem':>9}  "
          "totals (constraints/ready/decisions/traps), pack bytes")
    for shape, rows in report.items():
        for name, row in rows.items():
            ratio = f"{row['p50_vs_nmemory']:.2f}" if "p50_vs_nmemory" in row else "-"
            found = "/".join(str(row["totals"][key]) for key in TOTALS)
            print(f"{shape:<14} {name:<14} {row['p50_ms']:8.2f} {row['p95_ms']:8.2f} {row['p99_ms']:8.2f} "
                  f"{ratio:>9}  {found}, {row['bytes']} B")
    print("\nrequests:", json.dumps(requests))


# ---------------------------------------------------------------- profile


def profile(service: GraphService, requests: dict[str, dict[str, Any]], calls: int, top: int = 25) -> None:
    """GraphService.bootstrap in-process under cProfile: the pack path without any transport."""
    for body in requests.values():
        service.bootstrap(body)  # schema check, plans and the driver's pool, outside the profile
    profiler = cProfile.Profile()
    began = time.perf_counter()
    profiler.enable()
    for body in requests.values():
        for _ in range(calls):
            service.bootstrap(body)
    profiler.disable()
    took = time.perf_counter() - began
    count = calls * len(requests)
    print(f"\nprofile: {count} GraphService.bootstrap calls in-process, {took * 1000 / count:.2f} ms each "
          f"(under cProfile)")
    for key, title in (("cumulative", "cumulative time"), ("tottime", "own time")):
        out = StringIO()
        pstats.Stats(profiler, stream=out).sort_stats(key, "name").print_stats(top)
        lines = out.getvalue().splitlines()
        start = next(i for i, line in enumerate(lines) if line.lstrip().startswith("ncalls"))
        print(f"\ntop {top} by {title}:")
        print("\n".join(lines[start:start + top + 1]))


# ---------------------------------------------------------------- main


def bench_service(module: str, version: str, serving: str) -> tuple[dict[str, str], Database, GraphService]:
    """Print the run's header (command, machine, nmemory's version, the Neo4j it wipes) and build the
    in-process service that loads graphsvc's side: (Neo4j settings, database, service)."""
    print("command:", shlex.join([sys.executable, "-m", module, *sys.argv[1:]]))
    print(f"machine: {os.cpu_count()} cores, {platform.platform()}, Python {platform.python_version()}; {version}")
    neo4j_env = neo4j_target()
    print(f"graphsvc: Neo4j at {redact_uri(neo4j_env['NEO4J_URI'])} (wiped), {serving}")
    db = Database(neo4j_env["NEO4J_URI"], neo4j_env.get("NEO4J_USER", "neo4j"), neo4j_env.get("NEO4J_PASSWORD", ""),
                  neo4j_env.get("NEO4J_DATABASE", "neo4j"), timeout=60.0, query_timeout=60.0)
    return neo4j_env, db, GraphService(db, clock=system_clock)


def nmemory_version(binary: str) -> str:
    try:
        done = subprocess.run([binary, "--version"], capture_output=True, text=True, timeout=10)
    except OSError as exc:
        raise SystemExit(f"cannot run nmemory at {binary} ({exc}); build it or pass --nmemory PATH") from None
    return (done.stdout or done.stderr).strip()


def nmemory_server(binary: str, workdir: Path) -> Any:
    """nmemory over stdio on a fresh store file in `workdir` (its anchor root, so nothing else is read)."""
    from mcp import StdioServerParameters

    return StdioServerParameters(command=binary, args=["--db", str(workdir / "memory.sqlite3"), "--project", "bench"],
                                 env={"NMEMORY_ANCHOR_ROOT": str(workdir)}, cwd=str(workdir))


async def run(args: argparse.Namespace, neo4j_env: dict[str, str], items: list[Item],
              requests: dict[str, dict[str, Any]], workdir: Path) -> dict[str, Any]:
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    nmemory_params = nmemory_server(args.nmemory, workdir)
    graphsvc_params = StdioServerParameters(
        command=sys.executable, args=["-m", "graphsvc", "mcp"], cwd=str(ROOT),
        env={**neo4j_env, "PYTHONPATH": str(ROOT), "GRAPHSVC_LOG_LEVEL": "warning"})
    with open(workdir / "nmemory.stderr", "w") as nmemory_log, open(workdir / "graphsvc-mcp.stderr", "w") as mcp_log:
        async with stdio_client(nmemory_params, errlog=nmemory_log) as (n_read, n_write), \
                ClientSession(n_read, n_write) as nmemory:
            await nmemory.initialize()
            began = time.perf_counter()
            await load_nmemory(nmemory, items)
            print(f"nmemory: loaded {len(items)} capsules in {time.perf_counter() - began:.1f} s", flush=True)
            with Service("vs-nmemory", str(ROOT), {**neo4j_env, "GRAPHSVC_WORKERS": "1"}) as http, \
                    httpx.Client(base_url=f"http://127.0.0.1:{http.port}", timeout=30) as client:
                async with stdio_client(graphsvc_params, errlog=mcp_log) as (g_read, g_write), \
                        ClientSession(g_read, g_write) as graphsvc:
                    await graphsvc.initialize()
                    targets = {"nmemory": McpTarget(nmemory), "graphsvc-mcp": McpTarget(graphsvc),
                               "graphsvc-http": HttpTarget(client)}
                    return await interleave(targets, requests, args.rounds, args.calls, args.warmup)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--size", type=int, default=1000, help="capsules in the store (default 1000)")
    parser.add_argument("--rounds", type=int, default=10,
                        help="interleaved rounds; 0: load graphsvc and --profile only")
    parser.add_argument("--calls", type=int, default=50, help="calls per target and shape in each round")
    parser.add_argument("--warmup", type=int, default=20, help="untimed calls per target and shape first")
    parser.add_argument("--nmemory", default=DEFAULT_NMEMORY, help="the nmemory binary (env NMEMORY_BIN)")
    parser.add_argument("--profile", action="store_true", help="then profile GraphService.bootstrap in-process")
    args = parser.parse_args()
    if args.size < 10 or args.rounds < 0 or args.calls < 1 or args.warmup < 0:
        parser.error("--size must be at least 10, --rounds at least 0, --calls at least 1, --warmup at least 0")

    version = nmemory_version(args.nmemory) if args.rounds else "nmemory not run (--rounds 0)"
    items = build(args.size)
    requests = shapes(items)
    neo4j_env, db, service = bench_service("bench.vs_nmemory", version, "`graphsvc serve` with one worker")
    try:
        db.wipe_all()
        began = time.perf_counter()
        load_graphsvc(service, items)
        print(f"graphsvc: loaded {len(items)} capsules and {len(edges(items))} edges "
              f"in {time.perf_counter() - began:.1f} s", flush=True)
        report: dict[str, Any] = {}
        if args.rounds:
            with tempfile.TemporaryDirectory(prefix="vs-nmemory-") as tmp:
                report = asyncio.run(run(args, neo4j_env, items, requests, Path(tmp)))
        if report:
            print_report(report, requests)
            RESULTS.parent.mkdir(parents=True, exist_ok=True)
            RESULTS.write_text(json.dumps({
                "benchmark": "memory_bootstrap, graphsvc vs nmemory, interleaved, sequential",
                "command": shlex.join([sys.executable, "-m", "bench.vs_nmemory", *sys.argv[1:]]),
                "machine": {"cpus": os.cpu_count(), "platform": platform.platform(),
                            "python": platform.python_version()},
                "nmemory": version, "size": args.size, "edges": len(edges(items)), "rounds": args.rounds,
                "calls": args.calls, "warmup": args.warmup, "requests": requests, "results": report,
            }, indent=2) + "\n", encoding="utf-8")
            print(f"wrote {RESULTS}")
        if args.profile:
            profile(service, requests, args.calls)
    finally:
        service.close()


if __name__ == "__main__":
    main()
