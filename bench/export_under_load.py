"""Exports taken while agents write, each restored into an empty store and verified (issue 30, target 1).

    NEO4J_URI=bolt://127.0.0.1:7689 NEO4J_PASSWORD=... .venv/bin/python -m bench.export_under_load \\
        [--rounds 10] [--fill 20000] [--threads 4] [--workers 2]

1. Wipes the database and fills it with `--fill` capsules (an export-format file from
   bench.import_stream.generate, imported in-process).
2. Starts `graphsvc serve --workers N` and `--threads` writer threads, each on its own connection:
   every writer ingests tasks `blocked_by` its previous task (with a decision or a fact beside
   them now and then), relates its own capsules (BLOCKS between tasks, SUPERSEDES between
   decisions, and removes some of those edges again), updates them (a task done, a tier) and
   tombstones some of its facts and decisions.
3. Meanwhile takes `--rounds` exports through `GET /v1/capsules/export`, one after the other
   (a short pause between two), each streamed into a file.
4. Stops the writers and the service, then for each file: checks that both ends of every edge
   line are capsule lines of the file, wipes the database, imports the file
   (GraphService.import_file, the path `graphsvc import` takes), runs `graphsvc verify`'s
   recomputation and exports again: the new export must equal the file byte for byte.

`--rounds` defaults to GRAPHSVC_EXPORT_UNDER_LOAD_ROUNDS, else 10 (the issue's target). Prints, per
export: its seconds, capsule and edge lines, the writes committed while it ran, the dangling edge
ends, whether it imported, verified and round-tripped; then the writers' latency inside and
outside the exports (what an export costs writers). Writes bench/results/export_under_load.json.
Never point it at data you keep: it wipes the database (bench.target).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from graphsvc.clock import system_clock
from graphsvc.service import GraphService
from graphsvc.store.db import Database
from graphsvc.store.migrate import verify

from .concurrency import Service
from .import_stream import generate
from .target import bench_database

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results" / "export_under_load.json"
#: A fill capsule is about 700 bytes of export line.
FILL_LINE_BYTES = 740
PROJECTS = ["load/a", "load/b", "load/c/api"]
#: A writer's HTTP timeout: above the service's own bound (connect + query timeout), so a slow
#: write is answered by the service (a 503) rather than abandoned by the client.
WRITE_TIMEOUT = 30.0


def rounds_from_env() -> int:
    return int(os.environ.get("GRAPHSVC_EXPORT_UNDER_LOAD_ROUNDS", "10"))


@dataclass
class Writes:
    """(began, answered, route, status) of every write the writer threads sent."""

    calls: list[tuple[float, float, str, int]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def add(self, began: float, route: str, status: int) -> None:
        with self.lock:
            self.calls.append((began, time.monotonic(), route, status))

    def committed_between(self, start: float, end: float) -> int:
        """2xx writes answered inside [start, end] that began inside it too (so they committed during it)."""
        with self.lock:
            return sum(1 for began, answered, _, status in self.calls
                       if 200 <= status < 300 and start <= began and answered <= end)


class Writer(threading.Thread):
    """One agent writing through its own keep-alive connection until `stop` is set."""

    def __init__(self, base_url: str, number: int, writes: Writes, stop: threading.Event):
        super().__init__(name=f"writer-{number}", daemon=True)
        self.base_url, self.number, self.writes, self.stop = base_url, number, writes, stop
        self.rng = random.Random(number)
        self.project = PROJECTS[number % len(PROJECTS)]
        self.chain: list[str] = []       # its tasks, each blocked_by the one before
        self.decisions: list[str] = []
        self.others: list[str] = []      # facts and decisions it may tombstone
        self.edges: list[dict[str, str]] = []  # edges it added by relate (it may remove them again)
        self.errors: list[str] = []

    def _send(self, client: httpx.Client, route: str, method: str, path: str, body: Any) -> httpx.Response | None:
        began = time.monotonic()
        try:
            response = client.request(method, path, json=body)
        except httpx.HTTPError as exc:
            self.writes.add(began, route, 0)
            self.errors.append(f"{route}: {exc!r}")
            return None
        self.writes.add(began, route, response.status_code)
        if not 200 <= response.status_code < 300 and len(self.errors) < 20:
            self.errors.append(f"{route} {response.status_code} {response.text[:200]}")
        return response

    def _ingest(self, client: httpx.Client) -> None:
        task: dict[str, Any] = {"project_id": self.project, "kind": "task",
                                "content": f"task {len(self.chain)} of writer {self.number}"}
        if self.chain:
            task["blocked_by"] = [self.chain[-1]]
        items = [task]
        extra = self.rng.choice(("decision", "fact", None))
        if extra:
            items.append({"project_id": self.project, "kind": extra,
                          "content": f"{extra} {len(self.others)} of writer {self.number}"})
        response = self._send(client, "ingest", "POST", "/v1/capsules", {"items": items})
        if response is not None and response.status_code == 201:
            ids = response.json()["ids"]
            self.chain.append(ids[0])
            if extra:
                self.others.append(ids[1])
                if extra == "decision":
                    self.decisions.append(ids[1])

    def _relate(self, client: httpx.Client) -> None:
        if self.edges and self.rng.random() < 0.3:
            edge = self.edges.pop(self.rng.randrange(len(self.edges)))
            self._send(client, "relate", "POST", "/v1/capsules/relate", {"remove": [edge]})
            return
        if len(self.decisions) >= 2 and self.rng.random() < 0.4:
            newer, older = sorted(self.rng.sample(self.decisions, 2), key=lambda c: -int(c[4:]))
            edge = {"type": "SUPERSEDES", "from": newer, "to": older}
        elif len(self.chain) >= 3:
            a, b = self.rng.sample(self.chain[-20:], 2)
            edge = {"type": "BLOCKS", "from": a, "to": b}
        else:
            return
        response = self._send(client, "relate", "POST", "/v1/capsules/relate", {"add": [edge]})
        if response is not None and response.status_code == 200:
            self.edges.append(edge)

    def _update(self, client: httpx.Client) -> None:
        if self.chain and self.rng.random() < 0.6:
            target, change = self.rng.choice(self.chain), {"status": self.rng.choice(("done", "open"))}
        elif self.others:
            target, change = self.rng.choice(self.others), {"tier": self.rng.choice(("active", "stale"))}
        else:
            return
        self._send(client, "update", "PATCH", f"/v1/capsules/{target}", change)

    def _tombstone(self, client: httpx.Client) -> None:
        if len(self.others) < 3:
            return
        victim = self.others.pop(self.rng.randrange(len(self.others)))
        if victim in self.decisions:
            self.decisions.remove(victim)
        self._send(client, "tombstone", "POST", "/v1/capsules/tombstone", {"ids": [victim]})

    def run(self) -> None:
        with httpx.Client(base_url=self.base_url, timeout=WRITE_TIMEOUT) as client:
            while not self.stop.is_set():
                roll = self.rng.random()
                if roll < 0.5:
                    self._ingest(client)
                elif roll < 0.75:
                    self._relate(client)
                elif roll < 0.9:
                    self._update(client)
                else:
                    self._tombstone(client)


def check_ends(path: Path) -> dict[str, int]:
    """Capsule and edge lines of an export file, and the edge ends that name no capsule line of it."""
    capsules: set[str] = set()
    edges = dangling = 0
    with path.open("rb") as source:
        for raw in source:
            record = json.loads(raw)
            if "capsule" in record:
                capsules.add(record["capsule"]["id"])
            elif "edge" in record:
                edges += 1
                dangling += (record["edge"]["from"] not in capsules) + (record["edge"]["to"] not in capsules)
    return {"capsules": len(capsules), "edges": edges, "dangling_ends": dangling}


def export_once(base_url: str, path: Path) -> float:
    began = time.monotonic()
    with httpx.Client(base_url=base_url, timeout=httpx.Timeout(120.0)) as client:
        with client.stream("GET", "/v1/capsules/export") as response:
            if response.status_code != 200:
                raise RuntimeError(f"export answered {response.status_code}: {response.read()[:500]!r}")
            with path.open("wb") as out:
                for chunk in response.iter_bytes():
                    out.write(chunk)
    return time.monotonic() - began


def restore(db: Database, path: Path) -> dict[str, Any]:
    """Wipe, import the file, verify, export again: what restoring this backup gives."""
    db.wipe_all()
    service = GraphService(db, clock=system_clock)
    outcome: dict[str, Any] = {}
    began = time.monotonic()
    try:
        # What is measured is the export's cut, not the import's speed: a busy machine must not
        # turn a slow chunk (the request's query timeout) into a failed restore.
        with path.open("rb") as source, db.longer_timeout():
            answer = service.import_file(source)
        outcome.update(imported=True, import_s=round(time.monotonic() - began, 2), answer=answer)
    except Exception as exc:  # reported per export: the figure is how many fail
        outcome.update(imported=False, error=f"{type(exc).__name__}: {exc}"[:500])
        return outcome
    drift = verify(db)
    outcome["verified"] = drift.clean
    if not drift.clean:
        outcome["drift"] = {"fields": {k: v[:5] for k, v in drift.fields.items()}, "order": drift.order[:5],
                            "tallies": drift.tallies[:5]}
    again = path.with_suffix(".again")
    with again.open("w", encoding="utf-8", newline="") as out:
        for line in service.export_lines():
            out.write(line)
    outcome["round_trip"] = again.read_bytes() == path.read_bytes()
    again.unlink()
    return outcome


def pct(values: list[float], q: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    return round(ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1000, 1)


def writer_cost(writes: Writes, windows: list[tuple[float, float]]) -> dict[str, Any]:
    """Latency (ms) of 2xx writes that overlapped an export, against those that did not."""
    inside, outside = [], []
    for began, answered, _, status in writes.calls:
        if not 200 <= status < 300:
            continue
        overlaps = any(began < end and answered > start for start, end in windows)
        (inside if overlaps else outside).append(answered - began)
    return {"during_exports": {"n": len(inside), "p50_ms": pct(inside, .5), "p99_ms": pct(inside, .99)},
            "between_exports": {"n": len(outside), "p50_ms": pct(outside, .5), "p99_ms": pct(outside, .99)}}


def run(db: Database, work: Path, *, rounds: int, fill: int, threads: int, workers: int = 2,
        pause: float = 0.5, warm_up: float = 2.0, source: str = ".",
        log: Any = print) -> dict[str, Any]:
    """The whole experiment on `db` (wiped); returns the figures (see the module docstring)."""
    db.apply_schema()
    db.wipe_all()
    if fill:
        seed_file = work / "fill.jsonl"
        counts = generate(seed_file, fill * FILL_LINE_BYTES)
        with seed_file.open("rb") as seed, db.longer_timeout():
            GraphService(db, clock=system_clock).import_file(seed)
        seed_file.unlink()
        log(f"filled: {counts['capsules']} capsules, {counts['edges']} edges")
    writes = Writes()
    stop = threading.Event()
    exports: list[dict[str, Any]] = []
    windows: list[tuple[float, float]] = []
    with Service("export-under-load", source, {"GRAPHSVC_WORKERS": str(workers)}) as service:
        base_url = f"http://127.0.0.1:{service.port}"
        writers = [Writer(base_url, n, writes, stop) for n in range(threads)]
        for writer in writers:
            writer.start()
        try:
            time.sleep(warm_up)  # the writers' chains exist before the first export
            for number in range(rounds):
                path = work / f"export-{number}.jsonl"
                start = time.monotonic()
                seconds = export_once(base_url, path)
                end = time.monotonic()
                windows.append((start, end))
                exports.append({"round": number, "path": path, "export_s": round(seconds, 2),
                                "writes_committed_during": writes.committed_between(start, end)})
                time.sleep(pause)
        finally:
            stop.set()
            for writer in writers:
                writer.join(timeout=WRITE_TIMEOUT + 10)
    errors = [error for writer in writers for error in writer.errors]
    for row in exports:
        path = row.pop("path")
        row.update(check_ends(path))
        row.update(restore(db, path))
        row.pop("answer", None)
        path.unlink()
        log(f"export {row['round']}: {row['export_s']} s, {row['capsules']} capsules, {row['edges']} edges, "
            f"{row['writes_committed_during']} writes committed meanwhile, {row['dangling_ends']} dangling ends; "
            f"imported {row['imported']}, verified {row.get('verified')}, round trip {row.get('round_trip')}"
            + (f" ({row['error']})" if "error" in row else ""))
    by_route: dict[str, dict[str, int]] = {}
    for _, _, route, status in writes.calls:
        counts_of = by_route.setdefault(route, {"2xx": 0, "other": 0})
        counts_of["2xx" if 200 <= status < 300 else "other"] += 1
    failed = [row for row in exports if not (row["imported"] and row.get("verified") and row.get("round_trip")
                                             and row["dangling_ends"] == 0)]
    return {"rounds": rounds, "fill": fill, "threads": threads, "workers": workers,
            "exports_failing": len(failed), "exports": exports, "writes": by_route,
            "writer_latency": writer_cost(writes, windows), "writer_errors": errors[:10]}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=rounds_from_env(),
                        help="exports to take (default GRAPHSVC_EXPORT_UNDER_LOAD_ROUNDS, else 10)")
    parser.add_argument("--fill", type=int, default=20000, help="capsules stored before the writers start")
    parser.add_argument("--threads", type=int, default=4, help="writer threads")
    parser.add_argument("--workers", type=int, default=2, help="graphsvc serve workers")
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    db = bench_database()
    if not os.environ.get("NEO4J_URI"):  # the service is pointed at the same local bench instance
        from graphsvc.neo4j_local import LocalNeo4j

        local = LocalNeo4j.named("bench")
        os.environ.update(NEO4J_URI=local.bolt_uri, NEO4J_USER="neo4j", NEO4J_PASSWORD=local.password)
    try:
        with tempfile.TemporaryDirectory(prefix="graphsvc-export-load-") as tmp:
            result = run(db, Path(tmp), rounds=args.rounds, fill=args.fill, threads=args.threads,
                         workers=args.workers)
    finally:
        db.close()
    summary = {k: v for k, v in result.items() if k != "exports"}
    print(json.dumps(summary, indent=2))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    print(f"{result['exports_failing']} of {result['rounds']} exports failed to import, verify or round-trip; "
          f"wrote {args.out}")
    return 1 if result["exports_failing"] else 0


if __name__ == "__main__":
    raise SystemExit(main())
