"""An import interrupted at a random moment completes when it is run again (issue 30, part 2).

Two ways to interrupt it: the worker process running `graphsvc import` is killed with SIGKILL,
and, separately, Neo4j itself is killed (SIGKILL) under an import and started again. After the
re-run the store must equal the source (its export is the source file, byte for byte, so nothing
is lost, duplicated or changed), and `graphsvc verify` (a recomputation of every maintained field)
must find nothing to repair.

Sizes stay modest by default; GRAPHSVC_RESUME_CAPSULES, GRAPHSVC_RESUME_ITERATIONS and
GRAPHSVC_RESUME_NEO4J_ITERATIONS run the issue's target (e.g. 20000, 10 and 10). The seed is printed, GRAPHSVC_RESUME_SEED replays it.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from graphsvc.clock import fixed_clock
from graphsvc.errors import Unavailable
from graphsvc.service import GraphService
from graphsvc.store import transfer
from graphsvc.store.db import Database
from graphsvc.store.migrate import verify

CAPSULES = int(os.environ.get("GRAPHSVC_RESUME_CAPSULES", "3000"))
ITERATIONS = int(os.environ.get("GRAPHSVC_RESUME_ITERATIONS", "3"))
#: Each costs a Neo4j restart (tens of seconds).
NEO4J_ITERATIONS = int(os.environ.get("GRAPHSVC_RESUME_NEO4J_ITERATIONS", "2"))
SEED = int(os.environ.get("GRAPHSVC_RESUME_SEED", str(random.SystemRandom().randrange(10**6))))
#: Small chunks, so a run commits many transactions and a kill lands between or inside them.
CHUNK = 250
INSTANT = "2026-12-01T12:00:00.{:09d}Z"


def source_text(count: int, seed: int) -> str:
    """A file in export format (so the store's export must equal it): tasks and epics joined by
    BLOCKS edges with and against seq order (a loop too), decisions superseding older ones, facts and
    constraints, some done, tombstoned or expiring."""
    rng = random.Random(seed)
    capsules, blocks, supersedes = [], set(), set()
    tasks: list[int] = []
    decisions: list[int] = []
    for seq in range(1, count + 1):
        kind = rng.choice(["task", "task", "epic", "decision", "constraint", "fact"])
        capsule = {"id": f"cap-{seq}", "seq": seq, "project_id": rng.choice(["shop", "shop/api", "ops"]),
                   "kind": kind, "tier": rng.choice(["active", "active", "stale"]),
                   "headline": f"{kind} {seq}", "content": f"{kind} number {seq} of the resume test ✓",
                   "created_at": INSTANT.format(seq), "updated_at": INSTANT.format(seq + 1)}
        if kind in ("task", "epic"):
            capsule["status"] = rng.choice(["open", "open", "done"])
            for _ in range(rng.randint(0, 2)):
                if tasks:
                    other = rng.choice(tasks[-50:])
                    blocks.add((other, seq) if rng.random() < 0.8 else (seq, other))
            tasks.append(seq)
        if kind == "decision":
            if decisions and rng.random() < 0.5:
                supersedes.add((seq, rng.choice(decisions[-20:])))
            decisions.append(seq)
        if rng.random() < 0.05:
            capsule["tombstoned_at"] = INSTANT.format(seq + 2)
        if rng.random() < 0.05:
            capsule["valid_to"] = "2027-01-01T00:00:00.000000000Z"
        capsules.append({"capsule": capsule})
    lines = [transfer._line(c) for c in capsules]
    for edge_type, edges in (("BLOCKS", blocks), ("SUPERSEDES", supersedes)):
        lines += [transfer._line({"edge": {"type": edge_type, "from": f"cap-{a}", "to": f"cap-{b}"}})
                  for a, b in sorted(edges)]
    return "".join(line + "\n" for line in lines)


def assert_store_is(db: Database, text: str) -> None:
    service = GraphService(db, clock=fixed_clock(time_of_test()))
    exported = "".join(service.export_lines())
    assert exported == text, "the store's export differs from the source file"
    ids = db._driver.execute_query("MATCH (c:Capsule) RETURN count(c) AS n, count(DISTINCT c.id) AS d").records[0]
    assert ids["n"] == ids["d"] == CAPSULES
    report = verify(db)
    assert report.clean, report


def time_of_test():
    from datetime import datetime, timezone

    return datetime(2026, 12, 6, 12, 0, tzinfo=timezone.utc)


def capsule_count(db: Database) -> int:
    return db._driver.execute_query("MATCH (c:Capsule) RETURN count(c)").records[0][0]


def until_recovered(db: Database, limit: float = 120.0) -> None:
    """After a Neo4j restart the first call probes it and starts the re-warm, and is a 503
    (Database._probe_outage): ping until one passes, then wait for the re-warm to end."""
    deadline = time.monotonic() + limit
    while not db.ping():
        assert time.monotonic() < deadline, "Neo4j never answered again"
        time.sleep(0.2)
    assert db.wait_warm(limit), "the re-warm after the restart never ended"


def interrupted_mid_way(db: Database, text: str) -> bool:
    """Something of the file is stored but not all of it (or not its maintained state)."""
    if capsule_count(db) == 0:
        return False
    service = GraphService(db, clock=fixed_clock(time_of_test()))
    return "".join(service.export_lines()) != text or not verify(db).clean


# ------------------------------------------------------------ the worker killed


_IMPORT = ("import sys; from graphsvc.store import transfer; transfer.IMPORT_CHUNK = int(sys.argv[2]); "
           "from graphsvc.surfaces.cli import main; sys.exit(main(['import', sys.argv[1], '--no-progress']))")


def start_import(path: Path, env: dict[str, str]) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", _IMPORT, str(path), str(CHUNK)], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)


#: What a watcher sees of an import's progress, phase by phase: capsules written, edges written,
#: capsules whose maintained state the last step refreshed (`counted` is set by it, or stays absent).
PROGRESS = {
    "capsules": "MATCH (c:Capsule) RETURN count(c)",
    "edges": "MATCH (:Capsule)-[r]->(:Capsule) RETURN count(r)",
    "refreshed": "MATCH (c:Capsule) WHERE c.counted IS NOT NULL RETURN count(c)",
}


def progress(db: Database, phase: str) -> int:
    return db._driver.execute_query(PROGRESS[phase]).records[0][0]


def test_an_import_killed_with_sigkill_at_random_moments_completes_when_run_again(db, neo4j_target, tmp_path):
    """The worker is killed once a random phase of its writes reached a random point (polled from
    outside, so the kill lands between two of its transactions or inside the next one)."""
    print(f"GRAPHSVC_RESUME_SEED={SEED}")
    rng = random.Random(SEED)
    text = source_text(CAPSULES, SEED)
    path = tmp_path / "source.jsonl"
    path.write_text(text, encoding="utf-8")
    env = {**os.environ, "NEO4J_URI": neo4j_target.uri, "NEO4J_USER": neo4j_target.user,
           "NEO4J_PASSWORD": neo4j_target.password, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}

    whole = start_import(path, env)
    assert whole.wait(timeout=600) == 0, whole.stderr.read().decode()
    assert_store_is(db, text)
    final = {phase: progress(db, phase) for phase in PROGRESS}

    partial_states = []
    for _ in range(ITERATIONS):
        db.wipe_all()
        for _ in range(rng.randint(1, 2)):
            phase = rng.choice(sorted(PROGRESS))
            target = rng.randrange(1, final[phase])
            worker = start_import(path, env)
            deadline = time.monotonic() + 600
            while worker.poll() is None and progress(db, phase) < target:
                assert time.monotonic() < deadline
                time.sleep(0.005)
            worker.send_signal(signal.SIGKILL)
            worker.wait(timeout=60)
            partial_states.append(interrupted_mid_way(db, text))
        rerun = start_import(path, env)
        out, err = rerun.communicate(timeout=600)
        assert rerun.returncode == 0, err.decode()
        assert_store_is(db, text)
    # the kills really landed inside imports (some of the file stored, not all)
    assert any(partial_states), partial_states


# ------------------------------------------------------------ Neo4j killed


@pytest.fixture(scope="module")
def own_neo4j():
    """A Neo4j of this module's own (it is killed): as tests/integration/test_outage.py gets one."""
    from tests.integration.test_outage import ContainerOutageNeo4j, LocalOutageNeo4j
    from tests.neo4j_containers import docker_answers

    server = ContainerOutageNeo4j() if not os.environ.get("NEO4J_URI") and docker_answers() else LocalOutageNeo4j()
    try:
        server.start()
        yield server
    finally:
        server.remove()


def test_an_import_under_which_neo4j_is_killed_completes_when_run_again(own_neo4j, monkeypatch):
    """Neo4j is killed once the import has started a random number of its write transactions."""
    print(f"GRAPHSVC_RESUME_SEED={SEED}")
    rng = random.Random(SEED + 1)
    monkeypatch.setattr(transfer, "IMPORT_CHUNK", CHUNK)
    text = source_text(CAPSULES, SEED)
    lines = text.splitlines()
    db = Database(own_neo4j.bolt_uri, "neo4j", own_neo4j.password, timeout=2.0, query_timeout=30.0)
    writes = {"count": 0}
    original_write = db.write
    hold: dict[str, int | None] = {"at": None}
    killed = threading.Event()

    def counted_write(work):
        writes["count"] += 1
        if hold["at"] is not None and writes["count"] >= hold["at"]:
            killed.wait(120)  # this transaction starts only once Neo4j is dead
        return original_write(work)

    monkeypatch.setattr(db, "write", counted_write)
    try:
        db.apply_schema()
        service = GraphService(db, clock=fixed_clock(time_of_test()))
        service.ensure_schema()  # its warm-up writes are not the import's
        writes["count"] = 0
        service.import_lines(lines)
        whole = writes["count"]
        assert_store_is(db, text)

        partial_states = []
        for iteration in range(NEO4J_ITERATIONS):
            db.wipe_all()
            writes["count"] = 0
            kill_at = rng.randrange(2, whole)
            # A kill lands wherever the import has got to by then, which may be its end: when no
            # earlier kill stopped it part way, the last one holds the import's next transaction
            # until Neo4j is dead, half-way through its writes.
            killed.clear()
            hold["at"] = None
            if iteration == NEO4J_ITERATIONS - 1 and not any(partial_states):
                kill_at = hold["at"] = max(2, whole // 2)
            outcome: list[BaseException | None] = []

            def run() -> None:
                try:
                    service.import_lines(lines)
                    outcome.append(None)
                except BaseException as exc:  # reported by the assertion below
                    outcome.append(exc)

            worker = threading.Thread(target=run, daemon=True)
            worker.start()
            deadline = time.monotonic() + 300
            while writes["count"] < kill_at and worker.is_alive():
                assert time.monotonic() < deadline
                time.sleep(0.001)
            own_neo4j.kill()
            killed.set()
            worker.join(timeout=120)
            assert not worker.is_alive(), "the import did not end after Neo4j was killed (an unbounded wait)"
            assert outcome[0] is None or isinstance(outcome[0], Unavailable), repr(outcome[0])
            own_neo4j.start()
            until_recovered(db)
            hold["at"] = None
            partial_states.append(interrupted_mid_way(db, text))
            deadline = time.monotonic() + 120
            while True:  # the first calls after a restart may still meet a recovering server
                try:
                    service.import_lines(lines)
                    break
                except Unavailable:
                    assert time.monotonic() < deadline
                    time.sleep(1)
            assert_store_is(db, text)
        assert any(partial_states), partial_states
    finally:
        db.close()


def test_a_process_started_during_an_interrupted_import_of_an_emptied_store_does_not_break_its_resume(db, monkeypatch):
    """wipe_all removes the store's schema mark; a process that starts while an import of the emptied
    store is interrupted (a worker restarting, `graphsvc serve` after a Neo4j restart) runs
    `ensure_schema`, which migrates an unmarked store, BLOCKS order included. The import marks the
    store first, so that migration finds nothing to do and the re-run completes (not a 409 for an
    ord the migration gave away)."""
    monkeypatch.setattr(transfer, "IMPORT_CHUNK", CHUNK)
    text = source_text(CAPSULES, SEED)
    lines = text.splitlines()
    db.wipe_all()
    service = GraphService(db, clock=fixed_clock(time_of_test()))
    service.ensure_schema()  # this process migrated the store while it was still marked
    db.wipe_all()
    original_write = db.write

    def failing_write(work):
        if capsule_count(db) >= 2 * CHUNK:  # two chunks of capsules stored, then Neo4j "goes away"
            raise Unavailable("Neo4j went away (test)")
        return original_write(work)

    monkeypatch.setattr(db, "write", failing_write)
    with pytest.raises(Unavailable):
        service.import_lines(lines)
    monkeypatch.setattr(db, "write", original_write)
    assert 0 < capsule_count(db) < CAPSULES
    GraphService(db, clock=fixed_clock(time_of_test())).ensure_schema()  # a process starting now
    service.import_lines(lines)
    assert_store_is(db, text)
