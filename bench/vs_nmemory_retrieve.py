"""memory_retrieve side by side with nmemory: do both answer the same, and how fast, on the same store.

    python -m bench.vs_nmemory_retrieve [--size 1000] [--per-class 60] [--rounds 10] [--calls 50]
                                        [--warmup 20] [--nmemory /work/nmemory/target/release/nmemory] [--floor]

The store is bench.vs_nmemory's dataset (`build(--size)`), with query markers planted in it: words
found nowhere else, appended to chosen capsules' content (never to the first line, the headline),
plus the supersedes, expiries, tombstones and aliases each query class needs. The same capsules, in
the same order, are loaded into:

  nmemory   a fresh store file in a temp dir, over MCP stdio: memory_ingest, memory_relate per edge
            (bench.vs_nmemory.load_nmemory), memory_alias for each taught pair in BOTH directions
            (nmemory's aliases are one-way as taught; graphsvc's work both ways from one teach),
            memory_forget (mode purged) per tombstone;
  graphsvc  the Neo4j a bench may WIPE (NEO4J_URI / NEO4J_USER / NEO4J_PASSWORD, else the local
            `bench` instance), wiped, then ONE `import` of an export-format file holding the same
            capsules (ids cap-1.. in the same order as nmemory assigns them), edges, tombstones
            and alias sets.

1. Agreement (always): `--per-class` queries in each class below, each asked of both with the same
   body (`limit` 50, a budget that never trims), graphsvc in-process (GraphService.retrieve) and
   nmemory over MCP. Per class it tabulates how many queries agree on the outcome, on the result
   ids as a set, on their order, and on the `excluded` counts, and lists every difference.

   matched          a marker in 1-3 live capsules: as planted, upper-cased, a two-word term whose
                    words one capsule holds apart, next to an expired or superseded match, behind a
                    project fence, and folded (`é`, `ß`);
   alias-matched    a term found only through a taught alias: both directions, beside a direct
                    term, an alias of two words, an alias whose only match is superseded, one hop;
   superseded-only  every match is superseded (by a live capsule, or by one since tombstoned);
   expired-only     every match is expired (valid_to in the past);
   tombstoned-id    a term that is a tombstoned capsule's id, the tombstoned capsule's own marker,
                    and the id beside a live marker;
   nothing          markers planted nowhere, one planted only outside the fence, and terms without
                    a letter or digit.

2. Timing (`--rounds` > 0): memory_retrieve p50/p95/p99 for four request shapes, interleaved as
   bench.vs_nmemory does (same helpers): nmemory over MCP stdio, `graphsvc mcp` over MCP stdio and
   `graphsvc serve` (one worker) over one keep-alive HTTP client. With `--floor`, that client's
   GET /healthz and GET /readyz are timed in each shape's turn too: the floor under any answer. Shapes use default limit and
   budget: one common word over the whole store, three common words in one project, a term found
   through its alias, and a term nothing holds.

Writes bench/results/vs_nmemory_retrieve.json. The agreement part is correctness and holds on any
machine; the timing part is only meaningful on a quiet one.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import random
import shlex
import sys
import tempfile
import time
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import httpx

from graphsvc.service import GraphService
from graphsvc.store.transfer import exact_instant

from . import dataset
from .concurrency import Service
from .vs_nmemory import (DEFAULT_NMEMORY, FENCED, ROOT, GetTarget, HttpTarget, Item, McpTarget, bench_service, build, edges,
                         interleave, load_nmemory, nmemory_server, nmemory_version, tool_json)

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results" / "vs_nmemory_retrieve.json"
CLASSES = ("matched", "alias-matched", "superseded-only", "expired-only", "tombstoned-id", "nothing")
#: Every agreement query asks for this many rows with a budget that never trims: the comparison is
#: of what matched, not of where a budget cut.
LIMIT = 50
HUGE_BUDGET = 1_000_000


@dataclass
class Query:
    cls: str
    variant: str
    body: dict[str, Any]


@dataclass
class Plan:
    """The dataset with its markers planted, and what each query class needs besides."""

    items: list[Item]
    aliases: list[tuple[str, str]] = field(default_factory=list)  # (term, alias), taught once
    tombstoned: list[int] = field(default_factory=list)  # item indexes
    queries: list[Query] = field(default_factory=list)


class Planter:
    """Plants markers into a dataset and keeps track of which capsules are still plain live ones."""

    def __init__(self, items: list[Item], seed: int):
        self.items = items
        self.rng = random.Random(seed + 2)
        self.words = sorted({word for item in items for word in item.content.split()[1:] if word.isalpha()})
        self.count = 0
        superseded = {item.supersedes for item in items if item.supersedes is not None}
        # Live and untouched: not expired, not superseded, superseding nothing, on no BLOCKS edge
        # (so it can be tombstoned, expired or superseded without changing anything else).
        blocked = {index for kind, a, b in edges(items) if kind == "BLOCKS" for index in (a, b)}
        self.free = [index for index, item in enumerate(items)
                     if not item.expired and index not in superseded and item.supersedes is None
                     and index not in blocked]
        self.rng.shuffle(self.free)

    def marker(self, suffix: str = "") -> str:
        """A word no capsule holds (the vocabulary is letters only; markers carry digits)."""
        self.count += 1
        return f"zq{self.count}k{suffix}"

    def take(self, project: str | None = None) -> int:
        """A plain live capsule (of `project` when given), no longer free."""
        for position, index in enumerate(self.free):
            if project is None or self.items[index].project_id == project:
                return self.free.pop(position)
        raise SystemExit("the dataset ran out of plain capsules for the queries: raise --size or lower --per-class")

    def plant(self, index: int, *words: str) -> int:
        """Append the words to the capsule's content, each after a common word (never adjacent)."""
        filler = " ".join(f"{self.rng.choice(self.words)} {word}" for word in words)
        self.items[index].content += f" {filler}"
        return index

    def live(self, word: str, count: int, project: str | None = None) -> list[int]:
        return [self.plant(self.take(project), word) for _ in range(count)]

    def expired(self, word: str) -> int:
        index = self.plant(self.take(), word)
        self.items[index].expired = True
        return index

    def superseded(self, word: str) -> tuple[int, int]:
        """A capsule holding `word`, superseded by another plain capsule (which does not hold it): (old, new)."""
        old, new = self.plant(self.take(), word), self.take()
        self.items[new].supersedes = old
        return old, new


def body(terms: list[str], **fence: str) -> dict[str, Any]:
    return {"terms": terms, "limit": LIMIT, "token_budget": HUGE_BUDGET, **fence}


def plan(size: int, per_class: int, seed: int = dataset.SEED) -> Plan:
    items = build(size, seed)
    p = Planter(items, seed)
    out = Plan(items)

    def add(cls: str, variant: str, request: dict[str, Any]) -> None:
        out.queries.append(Query(cls, variant, request))

    for n in range(per_class):
        count = 1 + n % 3
        variant = n % 7
        if variant == 0:
            m = p.marker()
            p.live(m, count)
            add("matched", "as planted", body([m]))
        elif variant == 1:
            m = p.marker()
            p.live(m, count)
            add("matched", "upper case", body([m.upper()]))
        elif variant == 2:
            a, b = p.marker(), p.marker()
            both = p.take()
            p.plant(both, b, a)
            p.plant(p.take(), a)  # holds one word of the term only: no match
            add("matched", "two-word term", body([f"{a} {b}"]))
        elif variant == 3:
            m = p.marker()
            p.live(m, count)
            p.expired(m)
            add("matched", "beside an expired match", body([m]))
        elif variant == 4:
            m = p.marker()
            p.live(m, count)
            p.superseded(m)
            add("matched", "beside a superseded match", body([m]))
        elif variant == 5:
            m = p.marker()
            p.live(m, 1, project=FENCED)
            p.live(m, 1, project="alpha/api")
            p.live(m, 1, project="beta")
            fence = {"project_id": FENCED} if n % 2 else {"project_prefix": FENCED}
            add("matched", f"fenced ({next(iter(fence))})", body([m], **fence))
        else:
            folded, plain = (("café", "CAFE") if n % 2 == 0 else ("straße", "STRASSE"))
            m = p.marker()
            p.live(m + folded, count)
            add("matched", f"folded ({folded})", body([m + plain]))

    for n in range(per_class):
        count = 1 + n % 3
        variant = n % 6
        term, alias = p.marker(), p.marker()
        if variant == 0:
            p.live(alias, count)
            add("alias-matched", "term -> alias", body([term]))
        elif variant == 1:
            p.live(term, count)
            add("alias-matched", "alias -> term", body([alias]))
        elif variant == 2:
            direct = p.marker()
            p.live(alias, count)
            p.live(direct, 1)
            add("alias-matched", "beside a direct term", body([term, direct]))
        elif variant == 3:
            second = p.marker()
            p.plant(p.take(), second, alias)
            p.plant(p.take(), alias)  # one word of the alias only: no match
            out.aliases.append((term, f"{alias} {second}"))
            add("alias-matched", "two-word alias", body([term]))
            continue
        elif variant == 4:
            p.superseded(alias)
            add("alias-matched", "alias match superseded", body([term]))
        else:
            further = p.marker()
            out.aliases.append((alias, further))  # alias -> further: two hops from term
            p.live(alias, 1)
            p.live(further, 1)
            add("alias-matched", "one hop only", body([term]))
        out.aliases.append((term, alias))

    for n in range(per_class):
        m = p.marker()
        if n % 5 == 4:
            _, superseder = p.superseded(m)
            out.tombstoned.append(superseder)
            add("superseded-only", "its superseder tombstoned", body([m]))
            continue
        for _ in range(1 + n % 2):
            p.superseded(m)
        add("superseded-only", "superseded matches", body([m]))

    for n in range(per_class):
        m = p.marker()
        for _ in range(1 + n % 2):
            p.expired(m)
        add("expired-only", "expired matches", body([m]))

    for n in range(per_class):
        variant = n % 3
        m = p.marker()
        gone = p.plant(p.take(), m)
        out.tombstoned.append(gone)
        capsule_id = f"cap-{gone + 1}"
        if variant == 0:
            add("tombstoned-id", "the id", body([capsule_id]))
        elif variant == 1:
            add("tombstoned-id", "its content", body([m]))
        else:
            live = p.marker()
            p.live(live, 1)
            add("tombstoned-id", "the id beside a live term", body([capsule_id, live]))

    for n in range(per_class):
        variant = n % 5
        if variant == 0:
            add("nothing", "one term", body([p.marker()]))
        elif variant == 1:
            add("nothing", "two terms", body([p.marker(), p.marker()]))
        elif variant == 2:
            m = p.marker()
            p.live(m, 1, project="beta")
            add("nothing", "planted outside the fence", body([m], project_id=FENCED))
        elif variant == 3:
            add("nothing", "beside a term without letters", body(["--", p.marker()]))
        else:
            add("nothing", "only terms without letters", body(["--", "..."]))
    return out


# ---------------------------------------------------------------- loading


def instant(value: datetime) -> str:
    return exact_instant(value)


def import_file(plan_: Plan, now: datetime) -> list[str]:
    """The plan as graphsvc's export format: capsules cap-1.. in item order, edges, alias sets."""
    written = now - timedelta(hours=1)
    tombstoned = set(plan_.tombstoned)
    lines = []
    for index, item in enumerate(plan_.items):
        headline = item.content.split("\n", 1)[0]
        if len(headline) > 120:  # a cut word would be a token of graphsvc's headline and not of nmemory's text
            raise SystemExit(f"item {index}'s first line is longer than a headline ({len(headline)} characters)")
        capsule: dict[str, Any] = {"id": f"cap-{index + 1}", "seq": index + 1, "project_id": item.project_id,
                                   "kind": item.kind, "tier": "active", "headline": headline,
                                   "content": item.content, "created_at": instant(written),
                                   "updated_at": instant(written)}
        if item.kind in ("task", "epic"):
            capsule["status"] = "open"
        if item.expired:
            capsule["valid_to"] = instant(now - timedelta(days=1))
        if index in tombstoned:
            capsule["tombstoned_at"] = instant(written)
        lines.append(json.dumps({"capsule": capsule}, sort_keys=True))
    for kind, a, b in sorted(edges(plan_.items)):
        lines.append(json.dumps({"edge": {"type": kind, "from": f"cap-{a + 1}", "to": f"cap-{b + 1}"}}))
    taught: dict[str, list[str]] = {}
    for term, alias in plan_.aliases:
        taught.setdefault(term, []).append(alias)
    for term in sorted(taught):
        lines.append(json.dumps({"alias": {"term": term, "aliases": taught[term]}}))
    return lines


def load_graphsvc_plan(service: GraphService, plan_: Plan) -> dict[str, Any]:
    """Wipe the service's Neo4j and import the plan; the import's answer."""
    service.db.wipe_all()
    return service.import_lines(import_file(plan_, datetime.now(timezone.utc)))


async def load_nmemory_plan(session: Any, plan_: Plan) -> None:
    ids = await load_nmemory(session, plan_.items)
    if ids != [f"cap-{index + 1}" for index in range(len(plan_.items))]:
        raise SystemExit("nmemory did not give the items the ids cap-1.. in order (its store was not fresh?)")
    for term, alias in plan_.aliases:
        for pair in ({"term": term, "alias": alias}, {"term": alias, "alias": term}):
            tool_json(await session.call_tool("memory_alias", pair), "nmemory memory_alias")
    for index in plan_.tombstoned:
        tool_json(await session.call_tool("memory_forget", {"id": ids[index], "mode": "purged", "reason": "bench"}),
                  "nmemory memory_forget")


# ---------------------------------------------------------------- agreement


def answer_of(found: dict[str, Any]) -> dict[str, Any]:
    """What the comparison looks at in either product's answer."""
    return {"outcome": found["outcome"], "ids": [row["id"] for row in found.get("results", [])],
            "excluded": dict(sorted(found.get("excluded", {}).items()))}


async def ask_nmemory(session: Any, request: dict[str, Any]) -> dict[str, Any]:
    from mcp.shared.exceptions import MCPError

    try:
        result = await session.call_tool("memory_retrieve", request)
    except MCPError as exc:  # nmemory refuses some requests as a JSON-RPC error (-32602), not a tool error
        return {"outcome": "error", "ids": [], "excluded": {}, "error": str(exc)[:200]}
    if result.is_error:
        text = result.content[0].text if result.content else str(result)
        return {"outcome": "error", "ids": [], "excluded": {}, "error": text[:200]}
    return answer_of(json.loads(result.content[0].text))


def ask_graphsvc(service: GraphService, request: dict[str, Any]) -> dict[str, Any]:
    from graphsvc.errors import BadRequest, InvalidInput

    try:
        return answer_of(service.retrieve(dict(request)))
    except (BadRequest, InvalidInput) as exc:
        return {"outcome": "error", "ids": [], "excluded": {}, "error": exc.message[:200]}


async def agreement(nmemory: Any, service: GraphService, plan_: Plan) -> list[dict[str, Any]]:
    """Every query of the plan asked of both (nmemory loaded by load_nmemory_plan, graphsvc by
    load_graphsvc_plan), one comparison row each."""
    rows = []
    with service.db.longer_timeout():
        for query in plan_.queries:
            rows.append(compare(query, ask_graphsvc(service, query.body), await ask_nmemory(nmemory, query.body)))
    return rows


def compare(query: Query, ours: dict[str, Any], theirs: dict[str, Any]) -> dict[str, Any]:
    return {"class": query.cls, "variant": query.variant, "request": query.body, "graphsvc": ours, "nmemory": theirs,
            "outcome": ours["outcome"] == theirs["outcome"], "ids": set(ours["ids"]) == set(theirs["ids"]),
            "order": ours["ids"] == theirs["ids"], "excluded": ours["excluded"] == theirs["excluded"]}


def tabulate(rows: list[dict[str, Any]]) -> dict[str, dict[str, int]]:
    table: dict[str, dict[str, int]] = {}
    for cls in CLASSES:
        mine = [row for row in rows if row["class"] == cls]
        table[cls] = {"queries": len(mine), **{key: sum(row[key] for row in mine)
                                              for key in ("outcome", "ids", "order", "excluded")}}
    return table


def print_agreement(table: dict[str, dict[str, int]], rows: list[dict[str, Any]]) -> None:
    print(f"\n{'class':<17} {'queries':>7} {'outcome':>8} {'ids':>8} {'order':>8} {'excluded':>9}")
    for cls, counts in table.items():
        print(f"{cls:<17} {counts['queries']:>7} " + " ".join(
            f"{counts[key]:>{width}}" for key, width in (("outcome", 8), ("ids", 8), ("order", 8), ("excluded", 9))))
    differing = [row for row in rows if not (row["outcome"] and row["ids"] and row["excluded"])]
    print(f"\n{len(differing)} queries differ in outcome, result ids or excluded counts"
          + (":" if differing else "."))
    for row in differing:
        print(f"- [{row['class']} / {row['variant']}] {json.dumps(row['request'])}\n"
              f"    graphsvc: {json.dumps(row['graphsvc'])}\n    nmemory:  {json.dumps(row['nmemory'])}")
    reordered = [row for row in rows if row["ids"] and not row["order"]]
    print(f"\n{len(reordered)} queries return the same ids in another order (ranking keys differ).")


# ---------------------------------------------------------------- timing


def timing_shapes(plan_: Plan) -> dict[str, dict[str, Any]]:
    """Default limit and budget, as an agent asks: common words of the dataset, an alias, nothing."""
    rng = random.Random(dataset.SEED + 3)
    words = sorted({word.lower() for item in plan_.items for word in item.content.split()[1:] if word.isalpha()})
    common = rng.sample(words, 3)
    alias_term = next(query.body["terms"][0] for query in plan_.queries if query.variant == "term -> alias")
    return {
        "1 term": {"terms": common[:1]},
        "3 terms, project": {"terms": common, "project_id": FENCED},
        "alias": {"terms": [alias_term]},
        "abstain": {"terms": [next(query.body["terms"][0] for query in plan_.queries
                                   if query.cls == "nothing")]},
    }


def summary(answer: dict[str, Any]) -> dict[str, Any]:
    return {"outcome": answer.get("outcome"), "results": len(answer.get("results", [])),
            "bytes": len(json.dumps(answer))}


def print_timing(report: dict[str, Any]) -> None:
    print(f"\n{'shape':<18} {'target':<14} {'p50 ms':>8} {'p95 ms':>8} {'p99 ms':>8} {'p50/nmem':>9}  outcome, rows")
    for shape, rows in report.items():
        for name, row in rows.items():
            ratio = f"{row['p50_vs_nmemory']:.2f}" if "p50_vs_nmemory" in row else "-"
            print(f"{shape:<18} {name:<14} {row['p50_ms']:8.2f} {row['p95_ms']:8.2f} {row['p99_ms']:8.2f} "
                  f"{ratio:>9}  {row['outcome']}, {row['results']}")


# ---------------------------------------------------------------- main


async def run(args: argparse.Namespace, neo4j_env: dict[str, str], plan_: Plan, service: GraphService,
              workdir: Path) -> dict[str, Any]:
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    graphsvc_params = StdioServerParameters(
        command=sys.executable, args=["-m", "graphsvc", "mcp"], cwd=str(ROOT),
        env={**neo4j_env, "PYTHONPATH": str(ROOT), "GRAPHSVC_LOG_LEVEL": "warning"})
    out: dict[str, Any] = {}
    with open(workdir / "nmemory.stderr", "w") as nmemory_log, open(workdir / "graphsvc-mcp.stderr", "w") as mcp_log:
        async with stdio_client(nmemory_server(args.nmemory, workdir), errlog=nmemory_log) as (n_read, n_write), \
                ClientSession(n_read, n_write) as nmemory:
            await nmemory.initialize()
            began = time.perf_counter()
            await load_nmemory_plan(nmemory, plan_)
            print(f"nmemory: loaded {len(plan_.items)} capsules, {len(plan_.aliases)} alias pairs (both ways) and "
                  f"{len(plan_.tombstoned)} forgets in {time.perf_counter() - began:.1f} s", flush=True)
            out["rows"] = await agreement(nmemory, service, plan_)
            if not args.rounds:
                return out
            with Service("vs-nmemory-retrieve", str(ROOT), {**neo4j_env, "GRAPHSVC_WORKERS": "1"}) as http, \
                    httpx.Client(base_url=f"http://127.0.0.1:{http.port}", timeout=30) as client:
                async with stdio_client(graphsvc_params, errlog=mcp_log) as (g_read, g_write), \
                        ClientSession(g_read, g_write) as graphsvc:
                    await graphsvc.initialize()
                    targets = {"nmemory": McpTarget(nmemory, "memory_retrieve"),
                               "graphsvc-mcp": McpTarget(graphsvc, "memory_retrieve"),
                               "graphsvc-http": HttpTarget(client, "/v1/memory_retrieve")}
                    if args.floor:
                        targets["http-floor"] = GetTarget(client, "/healthz")
                        targets["neo4j-floor"] = GetTarget(client, "/readyz")
                    out["timing"] = await interleave(targets, timing_shapes(plan_), args.rounds, args.calls,
                                                     args.warmup, summary=summary)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--size", type=int, default=1000, help="capsules in the store (default 1000)")
    parser.add_argument("--per-class", type=int, default=60, help="agreement queries per class (default 60)")
    parser.add_argument("--rounds", type=int, default=10, help="interleaved timing rounds; 0: agreement only")
    parser.add_argument("--calls", type=int, default=50, help="calls per target and shape in each round")
    parser.add_argument("--warmup", type=int, default=20, help="untimed calls per target and shape first")
    parser.add_argument("--nmemory", default=DEFAULT_NMEMORY, help="the nmemory binary (env NMEMORY_BIN)")
    parser.add_argument("--floor", action="store_true",
                        help="also time, interleaved with the rest, the same HTTP client's GET /healthz (HTTP "
                             "alone) and GET /readyz (HTTP, a worker thread and one Neo4j round trip): the "
                             "least any graphsvc answer costs over HTTP")
    args = parser.parse_args()
    if args.size < 100 or args.per_class < 1 or args.rounds < 0 or args.calls < 1 or args.warmup < 0:
        parser.error("--size must be at least 100, --per-class and --calls at least 1, --rounds and --warmup "
                     "at least 0")

    command = shlex.join([sys.executable, "-m", "bench.vs_nmemory_retrieve", *sys.argv[1:]])
    plan_ = plan(args.size, args.per_class)
    version = nmemory_version(args.nmemory)
    neo4j_env, db, service = bench_service("bench.vs_nmemory_retrieve", version,
                                           "in-process and `graphsvc serve`")
    try:
        began = time.perf_counter()
        imported = load_graphsvc_plan(service, plan_)
        print(f"graphsvc: imported {imported['capsules']} capsules, {imported['edges']} edges and "
              f"{imported.get('aliases', 0)} alias sets in {time.perf_counter() - began:.1f} s", flush=True)
        with tempfile.TemporaryDirectory(prefix="vs-nmemory-retrieve-") as tmp:
            found = asyncio.run(run(args, neo4j_env, plan_, service, Path(tmp)))
    finally:
        service.close()
    table = tabulate(found["rows"])
    print_agreement(table, found["rows"])
    if "timing" in found:
        print_timing(found["timing"])
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps({
        "benchmark": "memory_retrieve, graphsvc vs nmemory: agreement per query class, then p50 interleaved",
        "command": command, "nmemory": version, "size": args.size, "per_class": args.per_class,
        "machine": {"cpus": os.cpu_count(), "platform": platform.platform(), "python": platform.python_version()},
        "agreement": table, "differences": [row for row in found["rows"]
                                            if not (row["outcome"] and row["ids"] and row["excluded"])],
        "rounds": args.rounds, "calls": args.calls, "warmup": args.warmup, "timing": found.get("timing"),
    }, indent=2, default=sorted) + "\n", encoding="utf-8")
    print(f"wrote {RESULTS}")


if __name__ == "__main__":
    main()
