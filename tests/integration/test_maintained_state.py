"""Schema v2's maintained state against the raw graph it summarises, on a real Neo4j.

Schema v2 moved read-time work (readiness, supersession, folded tokens, the BLOCKS order that
proves a fence acyclic) to the writes. SPEC §1 allows such fields only if they "never change an
answer, only its cost", so these tests hold every write path to two oracles (tests/integration/
oracle.py): graphsvc.store.migrate.verify (every stored field equals its from-scratch value and the
order's invariant holds) and the v1 pack read that recomputes everything (`oracle_pack`).

* a stateful property test drives random ingest / relate / update / tombstone / import sequences;
* a thread race runs conflicting writes concurrently through one service;
* a migration test upgrades a store written the v1 way (also interrupted and resumed) and
  checks that `verify --repair` mends a tampered store.
"""

from __future__ import annotations

import json
import random
import threading
import time
from datetime import datetime, timedelta, timezone
from typing import Any

import pytest
from hypothesis import HealthCheck, settings, strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule, run_state_machine_as_test

import graphsvc.store.migrate as migrate_module
from graphsvc.clock import fixed_clock
from graphsvc.errors import Conflict, NotFound, Unavailable
from graphsvc.service import GraphService
from graphsvc.core.textmatch import text_tokens
from graphsvc.store.maintain import SCHEMA_VERSION, stored_token
from graphsvc.store.migrate import migrate, schema_state, verify

from .migration_support import V4_TERM_INDEXES, CrashingPage, as_v4_left_the_indexes, fulltext_index_names
from .oracle import assert_maintained, describe_drift, oracle_pack, pack_diff

T0 = datetime(2026, 6, 1, 12, 0, tzinfo=timezone.utc)
TERMS = ["alpha", "beta"]

#: The packs compared with the oracle after every step: each fence, with and without terms, and
#: budgets from the empty pack (0) through floors-only (60) and trimming (400) to roomy (1500).
PACK_REQUESTS: tuple[dict[str, Any], ...] = (
    {},
    {"terms": TERMS, "token_budget": 0},
    {"terms": TERMS, "token_budget": 60},
    {"terms": TERMS, "token_budget": 400},
    {"project_id": "p", "terms": TERMS, "token_budget": 1500},
    {"project_prefix": "p", "terms": TERMS},
    {"project_prefix": "p", "token_budget": 60},
    # claims (SPEC §12): as a claiming agent sees it (its own held work first), and as another does
    {"agent": "agent-a", "terms": TERMS},
    {"project_prefix": "p", "agent": "agent-b", "token_budget": 400},
)
AGENTS = ("agent-a", "agent-b")


def assert_packs_match_oracle(svc: GraphService, requests=PACK_REQUESTS, context: str = "") -> list[dict[str, Any]]:
    """The maintained-state pack equals the recomputing v1 pack for each request (same clock); returns the packs."""
    now = svc.clock()
    packs = []
    for request in requests:
        with svc.db.longer_timeout():  # a cold plan takes seconds to compile on a busy machine
            new = svc.bootstrap(dict(request))
            old = oracle_pack(svc.db, request, now)
        assert new == old, f"{context} pack differs from the oracle for {request}:\n{pack_diff(new, old)}"
        packs.append(new)
    return packs


def instant(when: datetime) -> str:
    """The exact instant format of export/import (graphsvc.store.transfer)."""
    return when.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.") + f"{when.microsecond * 1000:09d}Z"


def seq_of(capsule_id: str) -> int:
    return int(capsule_id.split("-")[1])


# ---------------------------------------------------------------- a. stateful property test

KINDS = ("task", "epic", "constraint", "decision", "failure_pattern", "fact")
DAG = ("task", "epic")
PROJECTS = ("p", "p/x", "q")
VOCAB = ("alpha", "beta", "Café", "cafe", "gamma", "ALPHA", "delta")
STEP = timedelta(minutes=1)

#: Filled while the stateful test runs; printed at its end (quoted in the hand-over note).
STATS = {"examples": 0, "steps": 0, "packs_compared": 0, "cycles_seen": 0, "claims": 0, "packs_with_leases": 0}

contents = st.lists(st.sampled_from(VOCAB), min_size=1, max_size=3).map(" ".join)
#: One folded token of 259 letters: before schema v4 Lucene indexed its tail as the term "beta" too.
LONG_WORD = "x" * 255 + "beta"
#: Capsule text (headlines stay within 120 characters: `contents`).
texts = st.lists(st.sampled_from(VOCAB + (LONG_WORD,)), min_size=1, max_size=3).map(" ".join)


class MaintainedStateMachine(RuleBasedStateMachine):
    """Random write sequences; after each, maintained state == recomputed state and pack == oracle pack."""

    db: Any = None  # set by the test function (session-scoped `database` fixture)

    def __init__(self) -> None:
        super().__init__()
        self.db.wipe_all()
        self.now = T0
        self.svc = GraphService(self.db, clock=fixed_clock(self.now))
        self.kinds: dict[str, str] = {}
        self.projects: dict[str, str] = {}
        self.tombstoned: set[str] = set()
        self.blocks: set[tuple[str, str]] = set()
        self.supersedes: set[tuple[str, str]] = set()
        self.max_seq = 0
        STATS["examples"] += 1

    # -- helpers ---------------------------------------------------------

    def _tick(self) -> None:
        """Advance the clock a little so updated_at (decay order) and expiry differ between steps."""
        self.now += STEP
        self.svc.clock = fixed_clock(self.now)
        STATS["steps"] += 1

    def _ids(self, kinds=KINDS + ("handoff",)) -> list[str]:
        return sorted((i for i, k in self.kinds.items() if k in kinds), key=seq_of)

    def _valid_to(self, data: st.DataObject) -> datetime | None:
        choice = data.draw(st.sampled_from(("none", "past", "soon", "later")), label="valid_to")
        return {"none": None, "past": self.now - timedelta(hours=1), "soon": self.now + 3 * STEP,
                "later": self.now + timedelta(days=3)}[choice]

    def _record(self, ids: list[str], items: list[dict[str, Any]]) -> None:
        for capsule_id, item in zip(ids, items):
            self.kinds[capsule_id] = item["kind"]
            self.projects[capsule_id] = item["project_id"]
            self.max_seq = max(self.max_seq, seq_of(capsule_id))
            self.blocks.update((b, capsule_id) for b in item.get("blocked_by", []))
            self.blocks.update((capsule_id, b) for b in item.get("blocks", []))
            self.supersedes.update((capsule_id, old) for old in item.get("supersedes", []))

    # -- rules -------------------------------------------------------------

    @rule(data=st.data(), size=st.integers(1, 3))
    def ingest(self, data: st.DataObject, size: int) -> None:
        self._tick()
        dag, every = self._ids(DAG), self._ids()
        items = []
        for _ in range(size):
            kind = data.draw(st.sampled_from(KINDS), label="kind")
            item: dict[str, Any] = {"project_id": data.draw(st.sampled_from(PROJECTS), label="project"),
                                    "kind": kind, "content": data.draw(texts, label="content")}
            if kind in DAG and data.draw(st.sampled_from((False, False, True)), label="done"):
                item["status"] = "done"
            if kind == "constraint":
                item["tier"] = data.draw(st.sampled_from(("active", "active", "stale")), label="tier")
            valid_to = self._valid_to(data)
            if valid_to is not None:
                item["valid_to"] = valid_to.isoformat()
            if kind in DAG and dag:
                item["blocked_by"] = data.draw(st.lists(st.sampled_from(dag), max_size=2, unique=True), label="blocked_by")
                item["blocks"] = data.draw(st.lists(st.sampled_from(dag), max_size=2, unique=True), label="blocks")
            if every:
                item["supersedes"] = data.draw(st.lists(st.sampled_from(every), max_size=1), label="supersedes")
            items.append(item)
        body = items[0] if size == 1 and data.draw(st.booleans(), label="single") else {"items": items}
        self._record(self.svc.ingest(body)["ids"], items)

    @precondition(lambda self: len(self._ids(DAG)) >= 2)
    @rule(data=st.data())
    def add_blocks(self, data: st.DataObject) -> None:
        """A random BLOCKS edge: often against the order, sometimes closing a cycle."""
        self._tick()
        a, b = data.draw(st.lists(st.sampled_from(self._ids(DAG)), min_size=2, max_size=2, unique=True), label="edge")
        self.svc.relate({"add": [{"type": "BLOCKS", "from": a, "to": b}]})
        self.blocks.add((a, b))

    @precondition(lambda self: bool(self.blocks))
    @rule(data=st.data())
    def close_cycle(self, data: st.DataObject) -> None:
        """Reverse an existing BLOCKS edge: a 2-cycle (or a longer one with the other edges)."""
        self._tick()
        a, b = data.draw(st.sampled_from(sorted(self.blocks)), label="edge")
        self.svc.relate({"add": [{"type": "BLOCKS", "from": b, "to": a}]})
        self.blocks.add((b, a))

    @precondition(lambda self: bool(self.blocks))
    @rule(data=st.data())
    def remove_blocks(self, data: st.DataObject) -> None:
        self._tick()
        a, b = data.draw(st.sampled_from(sorted(self.blocks)), label="edge")
        self.svc.relate({"remove": [{"type": "BLOCKS", "from": a, "to": b}]})
        self.blocks.discard((a, b))

    @precondition(lambda self: len(self.kinds) >= 2)
    @rule(data=st.data())
    def add_supersedes(self, data: st.DataObject) -> None:
        self._tick()
        new, old = data.draw(st.lists(st.sampled_from(self._ids()), min_size=2, max_size=2, unique=True), label="edge")
        self.svc.relate({"add": [{"type": "SUPERSEDES", "from": new, "to": old}]})
        self.supersedes.add((new, old))

    @precondition(lambda self: bool(self.supersedes))
    @rule(data=st.data())
    def remove_supersedes(self, data: st.DataObject) -> None:
        self._tick()
        new, old = data.draw(st.sampled_from(sorted(self.supersedes)), label="edge")
        self.svc.relate({"remove": [{"type": "SUPERSEDES", "from": new, "to": old}]})
        self.supersedes.discard((new, old))

    @precondition(lambda self: bool(set(self.kinds) - self.tombstoned))
    @rule(data=st.data())
    def update(self, data: st.DataObject) -> None:
        self._tick()
        capsule_id = data.draw(st.sampled_from([i for i in self._ids() if i not in self.tombstoned]), label="id")
        changes: dict[str, Any] = {}
        if self.kinds[capsule_id] in DAG and data.draw(st.booleans(), label="set status"):
            changes["status"] = data.draw(st.sampled_from(("open", "done")), label="status")
        if data.draw(st.booleans(), label="set tier"):
            changes["tier"] = data.draw(st.sampled_from(("active", "archived", "stale")), label="tier")
        if data.draw(st.booleans(), label="set valid_to"):
            valid_to = self._valid_to(data)
            changes.update({"valid_to": valid_to.isoformat()} if valid_to else {"clear_valid_to": True})
        if not changes or data.draw(st.booleans(), label="set content"):
            changes["content"] = data.draw(texts, label="content")
        self.svc.update(capsule_id, changes)

    @precondition(lambda self: bool(self.kinds))
    @rule(data=st.data())
    def tombstone(self, data: st.DataObject) -> None:
        """Tombstone one or two capsules (again is a no-op); often a superseder or a blocker."""
        self._tick()
        ids = data.draw(st.lists(st.sampled_from(self._ids()), min_size=1, max_size=2, unique=True), label="ids")
        self.svc.tombstone(ids)
        self.tombstoned.update(ids)

    @rule(data=st.data(), size=st.integers(2, 4))
    def import_lines(self, data: st.DataObject, size: int) -> None:
        """Import synthetic capsules with fresh high seqs and edges among them (the bulk write path)."""
        self._tick()
        first = self.max_seq + data.draw(st.integers(5, 50), label="gap")
        stamp = instant(self.now - data.draw(st.integers(0, 30), label="age") * STEP)
        capsules = []
        for seq in range(first, first + size):
            kind = data.draw(st.sampled_from(("task", "task", "epic", "decision", "constraint", "failure_pattern")),
                             label="kind")
            capsule = {"id": f"cap-{seq}", "seq": seq, "project_id": data.draw(st.sampled_from(PROJECTS), label="project"),
                       "kind": kind, "tier": data.draw(st.sampled_from(("active", "active", "archived")), label="tier"),
                       "headline": data.draw(contents, label="headline"),
                       "content": data.draw(texts, label="content"), "created_at": stamp, "updated_at": stamp}
            if kind in DAG:
                capsule["status"] = data.draw(st.sampled_from(("open", "open", "done")), label="status")
            valid_to = self._valid_to(data)
            if valid_to is not None:
                capsule["valid_to"] = instant(valid_to)
            if data.draw(st.integers(0, 5), label="tombstoned") == 0:
                capsule["tombstoned_at"] = stamp
            capsules.append(capsule)
        ids = [c["id"] for c in capsules]
        dag = [c["id"] for c in capsules if c["kind"] in DAG]
        pairs = [(a, b) for a in ids for b in ids if a != b]
        edges = []
        if len(dag) >= 2:
            blocks = data.draw(st.lists(st.sampled_from([(a, b) for a, b in pairs if a in dag and b in dag]),
                                        max_size=4, unique=True), label="blocks")
            edges += [("BLOCKS", a, b) for a, b in blocks]
        supersedes = data.draw(st.lists(st.sampled_from(pairs), max_size=2, unique=True), label="supersedes")
        edges += [("SUPERSEDES", a, b) for a, b in supersedes]
        lines = [json.dumps({"capsule": c}) for c in capsules]
        lines += [json.dumps({"edge": {"type": t, "from": a, "to": b}}) for t, a, b in edges]
        stop_at = data.draw(st.integers(0, size + len(edges)), label="interrupted after this many chunks (0: not)")
        if stop_at:
            self._interrupted_import(lines, stop_at)
        self.svc.import_lines(lines)  # completes an interrupted one (what it wrote is already present)
        for capsule in capsules:
            self.kinds[capsule["id"]] = capsule["kind"]
            self.projects[capsule["id"]] = capsule["project_id"]
            if "tombstoned_at" in capsule:
                self.tombstoned.add(capsule["id"])
        self.max_seq = first + size - 1
        self.blocks.update((a, b) for t, a, b in edges if t == "BLOCKS")
        self.supersedes.update((a, b) for t, a, b in edges if t == "SUPERSEDES")

    def _forget(self, gone: set[str]) -> None:
        for capsule_id in gone:
            self.kinds.pop(capsule_id, None)
            self.projects.pop(capsule_id, None)
        self.tombstoned -= gone
        self.blocks = {(a, b) for a, b in self.blocks if a not in gone and b not in gone}
        self.supersedes = {(a, b) for a, b in self.supersedes if a not in gone and b not in gone}

    @rule(data=st.data())
    def delete_project_tree(self, data: st.DataObject) -> None:
        """`graphsvc demo --reset`'s removal of a subtree, often one whose capsules block or supersede others."""
        from graphsvc.store.maintain import delete_project_tree

        self._tick()
        prefix = data.draw(st.sampled_from(("p/x", "q", "p")), label="prefix")
        gone = {i for i, project in self.projects.items() if project == prefix or project.startswith(prefix + "/")}
        assert self.db.write(lambda tx: delete_project_tree(tx, prefix)) == len(gone)
        self._forget(gone)

    def _interrupted_import(self, lines: list[str], stop_at: int) -> None:
        """The import stops after `stop_at` of its chunks (one capsule each) committed, as a killed one does."""
        from graphsvc.store import transfer

        class Stop(Exception):
            pass

        class Progress:
            seen = 0

            def update(self, n: int) -> None:
                self.seen += 1
                if self.seen == stop_at:
                    raise Stop

        chunk = transfer.IMPORT_CHUNK
        transfer.IMPORT_CHUNK = 1
        try:
            self.svc.import_lines(lines, progress=Progress())
        except Stop:
            pass
        finally:
            transfer.IMPORT_CHUNK = chunk

    @rule(data=st.data(), size=st.integers(2, 4))
    def undo_an_import(self, data: st.DataObject, size: int) -> None:
        """An import is backed out (transfer.remove_imported) after agents tied its capsules to others."""
        from graphsvc.store import transfer

        before = set(self.kinds)
        self.import_lines(data, size)
        imported = sorted(set(self.kinds) - before, key=seq_of)
        others = [i for i in self._ids() if i not in imported]
        if others:
            target = data.draw(st.sampled_from(others), label="superseded")
            self.svc.relate({"add": [{"type": "SUPERSEDES", "from": imported[0], "to": target}]})
        dag_in = [i for i in imported if self.kinds[i] in DAG]
        dag_out = [i for i in others if self.kinds[i] in DAG]
        if dag_in and dag_out:
            self.svc.relate({"add": [{"type": "BLOCKS", "from": dag_in[0],
                                      "to": data.draw(st.sampled_from(dag_out), label="blocked")}]})
        transfer.remove_imported(self.db, imported)
        self._forget(set(imported))

    @rule(data=st.data())
    def teach_alias(self, data: st.DataObject) -> None:
        """Aliases (SPEC §10) are data beside the capsules: teaching or forgetting one changes no
        maintained field and no pack (bootstrap ignores them; the invariants check both)."""
        self._tick()
        term, alias = data.draw(st.lists(st.sampled_from(("alpha", "beta", "gamma", "delta")), min_size=2,
                                         max_size=2, unique=True), label="pair")
        body: dict[str, Any] = {"term": term, "aliases": [alias]}
        if data.draw(st.booleans(), label="prefixed"):
            body["project_prefix"] = data.draw(st.sampled_from(("p", "q")), label="prefix")
        if data.draw(st.integers(0, 3), label="forget") == 0:
            body["forget"] = True
        self.svc.alias(body)

    @rule(data=st.data())
    def session_round(self, data: st.DataObject) -> None:
        """A session (SPEC §11) starts and finishes: its handoff capsule supersedes the agent's previous
        one in the project, through the ordinary ingest, so the maintained state must stay exact."""
        self._tick()
        agent = data.draw(st.sampled_from(("agent-a", "agent-b")), label="agent")
        project = data.draw(st.sampled_from(PROJECTS), label="project")
        session = self.svc.session_start({"agent": agent, "project_id": project, "token_budget": 0})["session_id"]
        handoff = self.svc.session_finish({"session_id": session, "handoff": data.draw(texts, label="handoff")})
        capsule_id = handoff["handoff_id"]
        self.kinds[capsule_id] = "handoff"
        self.projects[capsule_id] = project
        self.max_seq = max(self.max_seq, seq_of(capsule_id))
        records = self.db._driver.execute_query("MATCH (:Capsule {id: $id})-[:SUPERSEDES]->(old) RETURN old.id AS old",
                                                id=capsule_id).records
        self.supersedes.update((capsule_id, r["old"]) for r in records)

    @rule(data=st.data())
    def claim(self, data: st.DataObject) -> None:
        """A claim (SPEC §12) of the next ready node or of a given one, often renewing; leases of a few
        steps, so some run out while the machine goes on. A refused claim writes nothing."""
        self._tick()
        body: dict[str, Any] = {"agent": data.draw(st.sampled_from(AGENTS), label="agent"),
                                "lease_s": data.draw(st.sampled_from((60, 150, 3600, 3600)), label="lease_s")}
        if data.draw(st.booleans(), label="fenced"):
            body["project_prefix"] = data.draw(st.sampled_from(("p", "q")), label="prefix")
        if data.draw(st.booleans(), label="fresh work"):  # random DAGs are seldom ready: add a ready task
            item = {"project_id": data.draw(st.sampled_from(PROJECTS), label="project"), "kind": "task",
                    "content": data.draw(texts, label="content")}
            self._record(self.svc.ingest(item)["ids"], [item])
        if self._ids(DAG) and data.draw(st.integers(0, 3), label="by id") == 0:
            body["task_id"] = data.draw(st.sampled_from(self._ids(DAG)), label="task_id")
        elif data.draw(st.booleans(), label="with terms"):
            body["terms"] = TERMS
        try:
            STATS["claims"] += self.svc.claim(body)["claimed"] is not None
        except (Conflict, NotFound):
            pass

    @precondition(lambda self: bool(self._ids(DAG)))
    @rule(data=st.data())
    def release(self, data: st.DataObject) -> None:
        self._tick()
        body = {"agent": data.draw(st.sampled_from(AGENTS), label="agent"),
                "task_id": data.draw(st.sampled_from(self._ids(DAG)), label="task_id")}
        try:
            self.svc.release(body)
        except (Conflict, NotFound):
            pass

    # -- the invariant -----------------------------------------------------

    @invariant()
    def maintained_state_equals_recomputed(self) -> None:
        assert_maintained(self.db, context=f"after step {STATS['steps']}")

    @invariant()
    def pack_equals_oracle(self) -> None:
        packs = assert_packs_match_oracle(self.svc, context=f"after step {STATS['steps']}")
        STATS["packs_compared"] += len(packs)
        STATS["cycles_seen"] += packs[0]["ready"].get("state") == "cycle"  # PACK_REQUESTS[0]: the whole store
        STATS["packs_with_leases"] += sum("held_by_others" in p.get("ready", {}) or '"held"' in json.dumps(p)
                                          for p in packs)


def test_random_writes_keep_maintained_state_and_pack_equal_to_the_oracle(database):
    """Every write path (ingest, relate, update, tombstone, import) keeps schema v2's state exact."""
    MaintainedStateMachine.db = database
    started = time.monotonic()
    for key in STATS:
        STATS[key] = 0
    with database.longer_timeout():  # the query timeout is for agents, not a busy 2-core CI box
        run_state_machine_as_test(MaintainedStateMachine, settings=settings(
            max_examples=25, stateful_step_count=12, deadline=None, database=None,
            suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much]))
    print(f"\nstateful maintained-state test: {STATS['examples']} examples, {STATS['steps']} steps, "
          f"{STATS['packs_compared']} packs compared with the oracle, {STATS['cycles_seen']} states with a "
          f"live cycle, {STATS['claims']} nodes claimed, {STATS['packs_with_leases']} packs showing leases, "
          f"{time.monotonic() - started:.1f}s")
    assert STATS["steps"] > STATS["examples"], "the machine ran no write steps"
    assert STATS["packs_with_leases"] > 0, "no compared pack showed a lease"


# ---------------------------------------------------------------- b. thread race


def test_concurrent_writers_leave_the_maintained_state_exact(db):
    """Racing writers on the same few nodes: each refresh locks before computing, so the last commit wins exactly."""
    svc = GraphService(db, clock=fixed_clock(T0 + timedelta(days=1)))
    tasks = svc.ingest({"items": [{"project_id": "p", "kind": "task", "content": f"alpha task {n}"}
                                  for n in range(6)]})["ids"]
    superseders = svc.ingest({"items": [{"project_id": "p", "kind": "decision", "content": f"beta decision {n}"}
                                        for n in range(4)]})["ids"]
    svc.relate({"add": [{"type": "BLOCKS", "from": tasks[0], "to": tasks[1]},
                        {"type": "BLOCKS", "from": tasks[1], "to": tasks[2]},
                        {"type": "BLOCKS", "from": tasks[3], "to": tasks[4]},
                        {"type": "SUPERSEDES", "from": superseders[0], "to": tasks[3]}]})

    outcomes = {"ok": 0, "unavailable": 0, "conflict": 0}
    failures: list[BaseException] = []
    lock = threading.Lock()
    start = threading.Barrier(8)

    def operation(rng: random.Random) -> None:
        a, b = rng.sample(tasks, 2)
        choice = rng.randrange(7)
        if choice == 0:
            svc.relate({"add": [{"type": "BLOCKS", "from": a, "to": b}]})
        elif choice == 1:
            svc.relate({"remove": [{"type": "BLOCKS", "from": a, "to": b}]})
        elif choice == 2:
            svc.update(a, {"status": rng.choice(("open", "done"))})
        elif choice == 3:
            svc.relate({"add": [{"type": "SUPERSEDES", "from": rng.choice(superseders), "to": a}]})
        elif choice == 4:
            svc.relate({"remove": [{"type": "SUPERSEDES", "from": rng.choice(superseders), "to": a}]})
        elif choice == 5:
            svc.ingest({"project_id": "p", "kind": "fact", "content": "gamma", "supersedes": [a]})
        elif rng.random() < 0.3:  # tombstoning is final: keep it rare so the graph stays interesting
            svc.tombstone([rng.choice(superseders)])
        else:
            svc.ingest({"project_id": "p", "kind": "task", "content": "alpha late", "blocked_by": [a], "blocks": [b]})

    def worker(index: int) -> None:
        rng = random.Random(index)
        start.wait()
        for _ in range(15):
            try:
                operation(rng)
                key = "ok"
            except Unavailable:
                key = "unavailable"
            except Conflict:
                key = "conflict"
            except BaseException as exc:  # noqa: BLE001 - reported below
                with lock:
                    failures.append(exc)
                return
            with lock:
                outcomes[key] += 1

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=300)
    assert not any(thread.is_alive() for thread in threads), "a writer hung"
    assert not failures, f"unexpected errors: {failures!r}"
    assert outcomes["ok"] >= 60, f"too few writes succeeded to prove anything: {outcomes}"
    print(f"\nthread race outcomes: {outcomes}")
    assert_maintained(db, context=f"after the race {outcomes}")
    assert_packs_match_oracle(svc, context="after the race")


# ---------------------------------------------------------------- c. migration from a v1 store

V1_CREATE = "UNWIND $rows AS row CREATE (c:Capsule) SET c = row"
V1_EDGES = {edge_type: f"UNWIND $edges AS e MATCH (a:Capsule {{id: e.from}}), (b:Capsule {{id: e.to}}) "
                       f"MERGE (a)-[:{edge_type}]->(b)" for edge_type in ("BLOCKS", "SUPERSEDES")}


def write_v1_store(db, now: datetime) -> list[str]:
    """Capsules and edges as the v1 code wrote them: no kind labels, no maintained fields, no version node."""
    specs = [  # (kind, project, content, status, extra)
        ("task", "p", "alpha first", "open", {}),
        ("task", "p", "beta second", "open", {}),
        ("task", "p/x", "Café third", "done", {}),
        ("task", "p", "alpha beta fourth", "open", {}),
        ("epic", "p", "delta epic", "open", {}),
        ("task", "q", "gamma other project", "open", {}),
        ("constraint", "p", "alpha rule", None, {}),
        ("constraint", "p", "stale rule", None, {"tier": "stale"}),
        ("decision", "p", "beta decision", None, {}),
        ("decision", "p", "old decision", None, {}),
        ("failure_pattern", "p/x", "Café trap", None, {}),
        ("fact", "p", "a retired fact", None, {"tombstoned_at": now - timedelta(days=1)}),
        ("task", "p", "expired alpha", "open", {"valid_to": now - timedelta(hours=1)}),
        ("task", "p", "cycle a", "open", {}),
        ("task", "p", "cycle b", "open", {}),
    ]
    rows = []
    for seq, (kind, project, content, status, extra) in enumerate(specs, start=1):
        updated = now - timedelta(days=seq)
        row = {"id": f"cap-{seq}", "seq": seq, "project_id": project, "kind": kind, "tier": "active",
               "headline": content, "content": content, "created_at": updated, "updated_at": updated, **extra}
        if status:
            row["status"] = status
        rows.append(row)
    edges = [
        ("BLOCKS", "cap-1", "cap-2"), ("BLOCKS", "cap-5", "cap-1"),   # 5 -> 1 goes against seq order
        ("BLOCKS", "cap-3", "cap-4"), ("BLOCKS", "cap-6", "cap-4"),   # a done blocker and a cross-project one
        ("BLOCKS", "cap-14", "cap-15"), ("BLOCKS", "cap-15", "cap-14"),  # a live cycle
        ("SUPERSEDES", "cap-9", "cap-10"),                              # a live superseder
        ("SUPERSEDES", "cap-12", "cap-6"),                              # a tombstoned one: cap-6 still blocks
    ]
    db._driver.execute_query(V1_CREATE, rows=rows)
    for edge_type, statement in V1_EDGES.items():
        db._driver.execute_query(statement, edges=[{"from": a, "to": b} for t, a, b in edges if t == edge_type])
    return [row["id"] for row in rows]


MIGRATION_REQUESTS = PACK_REQUESTS + ({"project_id": "q"}, {"project_prefix": "p/x", "terms": ["cafe"]})


def test_migrate_upgrades_a_v1_store_to_the_oracle_answers(db):
    """A store written before v2 drifts everywhere; one migrate makes it exact, a second does nothing."""
    now = T0 + timedelta(days=40)
    ids = write_v1_store(db, now)
    before = verify(db)
    assert not before.clean
    assert set(before.fields["label"]) == set(ids) and set(before.fields["tokens"]) == set(ids)
    assert before.order, "tasks without an ord must be reported"

    assert migrate(db) == {"from": 1, "to": SCHEMA_VERSION, "capsules": len(ids)}
    assert_maintained(db, context="after migrate")
    assert schema_state(db) == {"version": SCHEMA_VERSION, "migrating_to": None, "order_done": None, "pages_after": None}

    svc = GraphService(db, clock=fixed_clock(now))
    assert_packs_match_oracle(svc, MIGRATION_REQUESTS, context="after migrate")
    assert svc.bootstrap({"project_id": "p"})["ready"]["cycle"] == ["cap-14", "cap-15"]
    assert migrate(db) == {"from": SCHEMA_VERSION, "to": SCHEMA_VERSION, "capsules": 0}


def test_an_interrupted_migration_resumes_after_its_last_committed_page(db, monkeypatch):
    """A crash loses at most the page in flight: the rerun starts after `pages_after` and ends exact."""
    now = T0 + timedelta(days=40)
    ids = write_v1_store(db, now)
    monkeypatch.setattr(migrate_module, "PAGE", 2)
    page = CrashingPage(monkeypatch, "_migrate_page", crash_on=2)
    with pytest.raises(RuntimeError, match="simulated crash"):
        migrate(db)
    interrupted = schema_state(db)
    assert interrupted["migrating_to"] == SCHEMA_VERSION and interrupted["version"] is None
    assert interrupted["pages_after"] == 2, interrupted  # page 1 (cap-1, cap-2) committed, page 2 did not
    assert not verify(db).clean

    page.heal()
    done = migrate(db)
    assert page.calls[0] == 2, f"the rerun must resume after the committed page, not restart: {page.calls}"
    assert done == {"from": 1, "to": SCHEMA_VERSION, "capsules": len(ids) - 2}
    assert schema_state(db)["version"] == SCHEMA_VERSION
    assert_maintained(db, context="after the resumed migration")
    assert_packs_match_oracle(GraphService(db, clock=fixed_clock(now)), MIGRATION_REQUESTS, context="after resume")


def test_verify_repair_mends_a_tampered_store(db):
    """`verify --repair` finds and rewrites every kind of drift: fields, labels and the order."""
    now = T0 + timedelta(days=40)
    write_v1_store(db, now)
    migrate(db)
    assert_maintained(db, context="before tampering")
    run = db._driver.execute_query
    run("MATCH (c:Capsule {id: 'cap-5'}) SET c.ready = null")  # the epic is ready
    run("MATCH (c:Capsule {id: 'cap-2'}) SET c.open_blockers = 7")
    run("MATCH (c:Capsule {id: 'cap-9'}) REMOVE c:Decision")
    run("MATCH (c:Capsule {id: 'cap-7'}) SET c.tokens = ['zzz']")
    run("MATCH (c:Capsule {id: 'cap-10'}) SET c.superseded = false")
    run("MATCH (c:Capsule {id: 'cap-7'}) REMOVE c.counted")  # an active constraint
    run("MATCH (t:Tally) WHERE t.section = 'decisions' SET t.listed = t.listed + 5")
    run("""MATCH (a:Capsule {id: 'cap-5'})-[r:BLOCKS]->(b:Capsule {id: 'cap-1'}) WHERE r.closes_loop IS NULL
           WITH a, b, a.ord AS x, b.ord AS y SET a.ord = y, b.ord = x""")

    drift = verify(db)
    assert {name: sorted(ids) for name, ids in drift.fields.items()} == {
        "ready": ["cap-5"], "open_blockers": ["cap-2"], "label": ["cap-9"], "tokens": ["cap-7"],
        "superseded": ["cap-10"], "counted": ["cap-7"]}, describe_drift(db, drift)
    assert any("cap-5->cap-1" in problem for problem in drift.order), drift.order
    # decisions|p was raised by 5; constraints|p counts cap-7, whose `counted` is gone
    assert drift.tallies == ["constraints|p", "decisions|p"], drift.tallies

    repaired = verify(db, repair=True)
    assert not repaired.clean  # it reports what it found...
    assert_maintained(db, context="after repair")  # ...and leaves nothing behind
    assert_packs_match_oracle(GraphService(db, clock=fixed_clock(now)), MIGRATION_REQUESTS, context="after repair")


def test_migrate_upgrades_a_v2_store_to_tallies_and_is_exact(db):
    """A v2 store has labels, tokens and readiness but no `counted` and no tallies: v3 adds them."""
    now = T0 + timedelta(days=40)
    write_v1_store(db, now)
    migrate(db)
    run = db._driver.execute_query
    run("MATCH (c:Capsule) REMOVE c.counted, c.census")  # as schema v2 left a store
    run("MATCH (t:Tally|CensusTally) DETACH DELETE t")
    run("MATCH (v:SchemaVersion {name: 'graphsvc'}) SET v.version = 2")
    before = verify(db)
    assert set(before.fields) == {"counted", "census"}, describe_drift(db, before)

    done = migrate(db)
    assert (done["from"], done["to"]) == (2, SCHEMA_VERSION) and done["capsules"] > 0
    assert_maintained(db, context="after the v2 -> v3 migration")
    assert_packs_match_oracle(GraphService(db, clock=fixed_clock(now)), MIGRATION_REQUESTS, context="after v2 -> v3")
    assert migrate(db)["capsules"] == 0


LONG = "a" * 255 + "bug"  # one folded token; v3 stored it as it is, v4 marks it (maintain.stored_token)


def write_v3_store_with_long_tokens(db, now: datetime) -> tuple[list[str], list[str]]:
    """A migrated store, then capsules holding LONG with their tokens as schema v3 stored them."""
    written = write_v1_store(db, now)
    migrate(db)
    # The v1 writer bypasses the id counter: move it past those ids, as the bench loader does.
    db._driver.execute_query("MERGE (k:IdCounter {name: 'capsule'}) SET k.value = $value", value=len(written))
    svc = GraphService(db, clock=fixed_clock(now))
    long_ids = svc.ingest({"items": [{"project_id": "p", "kind": kind, "content": f"{kind} note {LONG}"}
                                     for kind in ("decision", "constraint", "task")]})["ids"]
    run = db._driver.execute_query
    texts = run("MATCH (c:Capsule) WHERE c.id IN $ids RETURN c.id AS id, c.headline AS headline, c.content AS content",
                ids=long_ids).records
    as_v3_stored = [{"id": r["id"], "tokens": sorted(text_tokens(r["headline"], r["content"]))} for r in texts]
    assert all(LONG in row["tokens"] for row in as_v3_stored)
    run("UNWIND $rows AS row MATCH (c:Capsule {id: row.id}) SET c.tokens = row.tokens", rows=as_v3_stored)
    run("MATCH (v:SchemaVersion {name: 'graphsvc'}) SET v.version = 3")
    total = run("MATCH (c:Capsule) RETURN collect(c.id) AS ids").records[0]["ids"]
    return long_ids, total


def test_migrate_marks_the_long_tokens_of_a_v3_store_and_nothing_else(db):
    now = T0 + timedelta(days=40)
    long_ids, total = write_v3_store_with_long_tokens(db, now)
    before = verify(db)
    assert {name: sorted(found) for name, found in before.fields.items()} == {"tokens": sorted(long_ids)}, \
        describe_drift(db, before)
    # The drift is what it costs: "bug" matches the v3 tokens' second Lucene piece.
    found = db._driver.execute_query(
        "CALL db.index.fulltext.queryNodes('capsule_terms', 'tokens:bug') YIELD node RETURN collect(node.id) AS ids")
    assert long_ids[0] in found.records[0]["ids"]

    unchanged = {r["id"]: r["tokens"] for r in db._driver.execute_query(
        "MATCH (c:Capsule) WHERE NOT c.id IN $ids RETURN c.id AS id, c.tokens AS tokens", ids=long_ids).records}
    assert migrate(db) == {"from": 3, "to": SCHEMA_VERSION, "capsules": len(total)}
    assert_maintained(db, context="after the v3 -> v4 migration")
    assert {r["id"]: r["tokens"] for r in db._driver.execute_query(
        "MATCH (c:Capsule) WHERE NOT c.id IN $ids RETURN c.id AS id, c.tokens AS tokens",
        ids=long_ids).records} == unchanged
    requests = MIGRATION_REQUESTS + ({"terms": ["bug"]}, {"project_id": "p", "terms": ["bug", "note"]})
    assert_packs_match_oracle(GraphService(db, clock=fixed_clock(now)), requests, context="after v3 -> v4")
    assert migrate(db)["capsules"] == 0
    marked = db._driver.execute_query("MATCH (c:Capsule) WHERE c.id IN $ids RETURN c.tokens AS tokens", ids=long_ids)
    assert all(stored_token(LONG) in r["tokens"] and LONG not in r["tokens"] for r in marked.records)
    found = db._driver.execute_query(
        "CALL db.index.fulltext.queryNodes('capsule_terms', 'tokens:bug') YIELD node RETURN collect(node.id) AS ids")
    assert found.records[0]["ids"] == []


def test_an_interrupted_v3_migration_resumes_and_one_another_version_left_restarts(db, monkeypatch):
    now = T0 + timedelta(days=40)
    long_ids, total = write_v3_store_with_long_tokens(db, now)
    monkeypatch.setattr(migrate_module, "PAGE", 4)
    page = CrashingPage(monkeypatch, "_mark_long_tokens_page", crash_on=2)
    with pytest.raises(RuntimeError, match="simulated crash"):
        migrate(db)
    assert schema_state(db)["pages_after"] == 4 and schema_state(db)["version"] == 3
    page.heal()
    assert migrate(db)["capsules"] == len(total) - 4
    assert_maintained(db, context="after the resumed v3 -> v4 migration")

    # A v2 -> v3 migration that older code left half done: its pages hold v3 fields, so v4 starts over.
    db._driver.execute_query("MATCH (v:SchemaVersion {name: 'graphsvc'}) SET v.version = 2, v.migrating_to = 3, "
                             "v.pages_after = 1000000")
    db._driver.execute_query("MATCH (c:Capsule) WHERE c.id IN $ids SET c.tokens = [$long]", ids=long_ids, long=LONG)
    assert migrate(db)["capsules"] == len(total)
    assert_maintained(db, context="after restarting another version's migration")


def capsule_count(db) -> int:
    return db._driver.execute_query("MATCH (c:Capsule) RETURN count(c) AS n").records[0]["n"]


#: Packs and retrieves over every section and kind, fenced and not, after the index swap.
V5_PACKS = MIGRATION_REQUESTS + ({"terms": ["cafe"]}, {"project_prefix": "p", "terms": ["alpha beta", "gamma"]})
V5_RETRIEVES = ({"terms": ["alpha"]}, {"terms": ["beta", "cafe"], "kinds": ["task", "epic"]},
                {"terms": ["alpha"], "project_id": "p", "kinds": ["decision", "fact"]},
                {"terms": ["alpha"], "project_prefix": "p", "kinds": ["failure_pattern"]})


def test_migrate_replaces_v4s_five_term_indexes_with_one_and_answers_stay_exact(db):
    now = T0 + timedelta(days=40)
    write_v1_store(db, now)
    migrate(db)
    svc = GraphService(db, clock=fixed_clock(now))
    retrieved = [svc.retrieve(dict(request)) for request in V5_RETRIEVES]
    assert any(answer["results"] for answer in retrieved)
    as_v4_left_the_indexes(db)
    assert sorted(verify(db).indexes) == sorted(
        ["full-text index capsule_terms is missing"]
        + [f"full-text index {name} is not in the schema" for name in V4_TERM_INDEXES])

    # every capsule is walked once (v6's census), and only the indexes change form
    assert migrate(db) == {"from": 4, "to": SCHEMA_VERSION, "capsules": capsule_count(db)}
    assert fulltext_index_names(db) == {"capsule_terms"}
    assert_maintained(db, context="after the v4 -> v6 migration")
    svc = GraphService(db, clock=fixed_clock(now))
    assert_packs_match_oracle(svc, V5_PACKS, context="after v4 -> v5")
    assert [svc.retrieve(dict(request)) for request in V5_RETRIEVES] == retrieved
    assert migrate(db) == {"from": SCHEMA_VERSION, "to": SCHEMA_VERSION, "capsules": 0}


def test_the_v5_step_keeps_v4s_indexes_until_the_new_one_is_online_and_resumes(db, monkeypatch):
    now = T0 + timedelta(days=40)
    write_v1_store(db, now)
    migrate(db)
    as_v4_left_the_indexes(db)
    real_apply = db.apply_schema
    # capsule_terms not online yet: as a schema that has not created it (awaiting it timed out).
    monkeypatch.setattr(db, "apply_schema", lambda name="schema": None if name == "schema" else real_apply(name))
    with pytest.raises(RuntimeError, match="capsule_terms is missing"):
        migrate(db)
    assert fulltext_index_names(db) == set(V4_TERM_INDEXES), "v4's indexes must stay while the new one is not online"
    state = schema_state(db)
    assert (state["version"], state["migrating_to"]) == (4, SCHEMA_VERSION)

    monkeypatch.setattr(db, "apply_schema", real_apply)
    # the page walk finished before the index step stopped: the rerun starts after its last page
    assert migrate(db) == {"from": 4, "to": SCHEMA_VERSION, "capsules": 0}
    assert fulltext_index_names(db) == {"capsule_terms"}
    assert_packs_match_oracle(GraphService(db, clock=fixed_clock(now)), V5_PACKS, context="after the resumed v5 step")


def test_verify_repair_restores_the_term_index(db):
    now = T0 + timedelta(days=40)
    write_v1_store(db, now)
    migrate(db)
    db._driver.execute_query("DROP INDEX capsule_terms")
    assert verify(db).indexes == ["full-text index capsule_terms is missing"]
    assert verify(db, repair=True).indexes == ["full-text index capsule_terms is missing"]  # what it found
    assert verify(db).clean
    assert_packs_match_oracle(GraphService(db, clock=fixed_clock(now)), V5_PACKS, context="after the repair")
