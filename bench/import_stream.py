"""Import of a large JSON Lines file (default 1 GiB) over HTTP and the CLI: rate and worker memory.

    NEO4J_URI=bolt://127.0.0.1:7689 NEO4J_PASSWORD=... .venv/bin/python -m bench.import_stream --size 1G

Generates an export-format file of about `--size` bytes (capsules of ~500-900 bytes in 30
projects, tasks joined by BLOCKS edges mostly in seq order, decisions superseding older ones),
then for each `--via` (http, cli or both): wipes the database, imports the file and reports
capsules/s and the importing process's resident memory: its peak (VmHWM, and VmRSS sampled every
20 ms) and the growth over its baseline. The baseline is the worker's VmRSS just before the POST
(http: a `graphsvc serve --workers 1` process), or the peak of the same CLI importing a one-line
file (cli). Targets (issue 30): growth <= 300 MB, >= 5,000 capsules/s. Prints one JSON summary.
Never point it at data you keep: it wipes the database (bench.target).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any, Iterator

import httpx

from graphsvc.store.transfer import _line

from .target import bench_database

WORDS = [f"{a}{b}" for a in ("ka", "lo", "mi", "ne", "ru", "sa", "ti", "vo") for b in ("rd", "mp", "xt", "nk", "st")]
KINDS = ["fact"] * 40 + ["doc"] * 20 + ["task"] * 15 + ["decision"] * 10 + ["failure_pattern"] * 5 + \
        ["procedure"] * 5 + ["constraint"] * 2 + ["epic"] * 2 + ["capability"]
INSTANT = "2026-12-01T12:00:00.{:09d}Z"


def parse_size(text: str) -> int:
    units = {"K": 1024, "M": 1024 ** 2, "G": 1024 ** 3}
    text = text.strip().upper().rstrip("B").rstrip("I")
    return int(float(text[:-1]) * units[text[-1]]) if text[-1:] in units else int(text)


def generate(path: Path, size: int, seed: int = 1) -> dict[str, int]:
    """An export-format file of about `size` bytes; returns its capsule and edge counts."""
    rng = random.Random(seed)
    blocks: list[tuple[int, int]] = []
    supersedes: list[tuple[int, int]] = []
    last_task, last_decision = 0, 0
    written, seq = 0, 0
    with path.open("w", encoding="utf-8", newline="\n") as out:
        # edge lines are ~70 bytes; the margin keeps the file at most `size` (HTTP accepts up to 1 GiB)
        while written + 80 * (len(blocks) + len(supersedes)) + 4096 < size:
            seq += 1
            kind = rng.choice(KINDS)
            words = " ".join(rng.choice(WORDS) for _ in range(rng.randint(60, 120)))
            capsule = {"id": f"cap-{seq}", "seq": seq, "project_id": f"p{seq % 10:02d}" + ("", "/api", "/web")[seq % 3],
                       "kind": kind, "tier": "active", "headline": f"{kind} {seq} {words[:40]}", "content": words,
                       "created_at": INSTANT.format(seq % 10**9), "updated_at": INSTANT.format(seq % 10**9)}
            if kind in ("task", "epic"):
                capsule["status"] = "open" if rng.random() < 0.7 else "done"
                if last_task:
                    blocks.append((last_task, seq) if rng.random() < 0.9 else (seq, last_task))
                last_task = seq
            if kind == "decision":
                if last_decision and rng.random() < 0.3:
                    supersedes.append((seq, last_decision))
                last_decision = seq
            line = _line({"capsule": capsule}) + "\n"
            out.write(line)
            written += len(line.encode("utf-8"))
        for edge_type, edges in (("BLOCKS", sorted(set(blocks))), ("SUPERSEDES", sorted(set(supersedes)))):
            for a, b in edges:
                out.write(_line({"edge": {"type": edge_type, "from": f"cap-{a}", "to": f"cap-{b}"}}) + "\n")
    return {"capsules": seq, "edges": len(set(blocks)) + len(set(supersedes)), "bytes": path.stat().st_size}


def status_kb(pid: int, field: str) -> int:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(field + ":"):
                return int(line.split()[1])
    except (FileNotFoundError, ProcessLookupError):
        pass
    return 0


class Sampler:
    """VmRSS of a process every 20 ms, in a thread, until stopped (and its VmHWM at the end)."""

    def __init__(self, pid: int):
        self.pid, self.peak_kb, self.hwm_kb = pid, 0, 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            self.peak_kb = max(self.peak_kb, status_kb(self.pid, "VmRSS"))
            self.hwm_kb = max(self.hwm_kb, status_kb(self.pid, "VmHWM"))
            time.sleep(0.02)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()


def neo4j_env() -> dict[str, str]:
    db = bench_database()
    db.close()
    env = dict(os.environ)
    if not env.get("NEO4J_URI"):
        from graphsvc.neo4j_local import LocalNeo4j

        local = LocalNeo4j.named("bench")
        env.update(NEO4J_URI=local.bolt_uri, NEO4J_USER="neo4j", NEO4J_PASSWORD=local.password)
    return env


def wipe() -> None:
    db = bench_database()
    try:
        db.apply_schema()
        db.wipe_all()
    finally:
        db.close()


def via_cli(path: Path, env: dict[str, str], work: Path) -> dict[str, Any]:
    tiny = work / "one-line.jsonl"
    with path.open("rb") as source:
        tiny.write_bytes(source.readline())

    def run(file: Path) -> tuple[float, Sampler]:
        began = time.monotonic()
        proc = subprocess.Popen([sys.executable, "-m", "graphsvc", "import", str(file), "--no-progress"], env=env,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        sampler = Sampler(proc.pid)
        _, err = proc.communicate()
        sampler.stop()
        if proc.returncode != 0:
            raise SystemExit(f"graphsvc import failed: {err.decode()[-2000:]}")
        return time.monotonic() - began, sampler

    wipe()
    _, baseline = run(tiny)
    wipe()
    seconds, sampler = run(path)
    return {"seconds": round(seconds, 1), "baseline_mb": round(max(baseline.hwm_kb, baseline.peak_kb) / 1024, 1),
            "peak_mb": round(max(sampler.hwm_kb, sampler.peak_kb) / 1024, 1),
            "growth_mb": round((max(sampler.hwm_kb, sampler.peak_kb) - max(baseline.hwm_kb, baseline.peak_kb)) / 1024, 1)}


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def file_chunks(path: Path, size: int = 1024 * 1024) -> Iterator[bytes]:
    with path.open("rb") as source:
        while chunk := source.read(size):
            yield chunk


def via_http(path: Path, env: dict[str, str], work: Path) -> dict[str, Any]:
    wipe()
    port = free_port()
    env = {**env, "GRAPHSVC_PORT": str(port), "GRAPHSVC_WORKERS": "1", "GRAPHSVC_LOG_LEVEL": "warning"}
    env.pop("GRAPHSVC_API_TOKEN", None)
    log = work / "serve.log"
    with log.open("wb") as out:
        server = subprocess.Popen([sys.executable, "-m", "graphsvc", "serve", "--workers", "1"], env=env,
                                  stdout=out, stderr=out)
    try:
        with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=None) as client:
            deadline = time.monotonic() + 180
            while True:
                try:
                    if client.get("/readyz").status_code == 200:
                        break
                except httpx.TransportError:
                    pass
                if server.poll() is not None or time.monotonic() > deadline:
                    raise SystemExit("graphsvc serve did not become ready:\n" + log.read_text()[-2000:])
                time.sleep(0.2)
            baseline_kb = status_kb(server.pid, "VmRSS")
            sampler = Sampler(server.pid)
            began = time.monotonic()
            response = client.post("/v1/capsules/import", content=file_chunks(path),
                                   headers={"content-type": "application/x-ndjson"})
            seconds = time.monotonic() - began
            sampler.stop()
            if response.status_code != 201:
                raise SystemExit(f"import answered {response.status_code}: {response.text[:2000]}")
    finally:
        server.terminate()
        server.wait(timeout=60)
    peak = max(sampler.peak_kb, sampler.hwm_kb)
    return {"seconds": round(seconds, 1), "baseline_mb": round(baseline_kb / 1024, 1), "peak_mb": round(peak / 1024, 1),
            "growth_mb": round((peak - baseline_kb) / 1024, 1), "answer": response.json()}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--size", default="1G", help="file size to generate (e.g. 1G, 50M; default 1G)")
    parser.add_argument("--via", choices=["http", "cli", "both"], default="both")
    parser.add_argument("--file", default=None, help="import this file instead of generating one")
    args = parser.parse_args(argv)
    env = neo4j_env()
    with tempfile.TemporaryDirectory(prefix="graphsvc-import-bench-") as tmp:
        work = Path(tmp)
        if args.file:
            path = Path(args.file)
            counts = {"capsules": sum(1 for line in path.open("rb") if line.startswith(b'{"capsule"')),
                      "bytes": path.stat().st_size}
        else:
            path = work / "import.jsonl"
            counts = generate(path, parse_size(args.size))
        summary: dict[str, Any] = {"file": counts}
        for via in (["http", "cli"] if args.via == "both" else [args.via]):
            result = (via_http if via == "http" else via_cli)(path, env, work)
            result["capsules_per_s"] = round(counts["capsules"] / result["seconds"])
            summary[via] = result
        print(json.dumps(summary, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
