"""One plan per statement, whatever the request (graphsvc.store.db.statement_arguments).

Neo4j's own evidence, not a timing of ours: its query statistics (`db.stats.collect('QUERIES')`)
report, for every invocation of every statement, the time Neo4j spent compiling it
(`elapsedCompileTimeInUs`): well under a millisecond on a cache hit, milliseconds to seconds when
it plans. The test

1. empties Neo4j's query caches (a freshly started Neo4j's state) and lets the service warm up;
2. runs every operation in ONE shape a dozen times (so every statement is planned once and, past
   Neo4j's hot-expression threshold of 10 hits, recompiled once);
3. collects statistics while a few hundred requests of every other shape run: fences x term
   counts x phrase sizes x budgets, retrieves by fence, terms, kinds and limit with and without a
   taught alias, batches of 2 to 60, several edges, get/list sizes;
4. asserts that none of them made Neo4j compile anything.

With plain parameters, step 3 would plan the pack statement again for 1, 2, 3 and 9 terms, a
phrase, each fence, and every write again for each batch-size bucket (0, 1, 2-10, 11-100, …).
A re-plan because statistics moved is growth, not a shape: every Neo4j the suite starts sets
`dbms.cypher.min_replan_interval=5m` (as docs/design.md asks of production), so none falls inside
these seconds; a server given through NEO4J_URI with a shorter interval skips the test, saying so.
"""

from __future__ import annotations

import random
from datetime import datetime, timedelta, timezone
from typing import Any

import pytest

from graphsvc.clock import fixed_clock
from graphsvc.errors import Conflict, NotFound
from graphsvc.store.idempotency import IdempotencyKey
from graphsvc.service import GraphService
from graphsvc.store.warmup import warm_write_plans

NOW = datetime(2026, 12, 6, 12, 0, tzinfo=timezone.utc)
WORDS = ["refund", "ledger", "cache", "deploy", "parser", "webhook", "queue", "schema", "auth", "retry",
         "timeout", "index", "lucene", "budget", "token", "graph", "cycle", "agent", "claim", "lease"]
PROJECTS = ["shop", "shop/api", "shop/web", "billing", "billing/jobs-and-a-rather-long-project-name"]
#: Compile time that counts as planning. Measured here: a cache hit costs 0.05-0.5 ms on a warm JVM
#: and up to ~10 ms on one just started; a statement's expressions recompiled after 10 hits 2-140 ms
#: (done in step 2, as is a compile the tally update needs once on its first large batch). Planning
#: the pack statement for a new shape cost 50-1,700 ms (what stormed), so the bar is well below it;
#: a write statement's first plan (10-30 ms) is caught when it is above the bar, and the writes go
#: through the same `statement_arguments` as the pack.
PLANNED_US = 20_000
#: The same for the statements over LONG_STATEMENT characters as sent (the pack's, the digest's and the
#: retrieve's reads), whose new-shape plans cost 50 ms and more: a cache hit of the pack's head stalled
#: past 20 ms (21.4 ms) on a freshly started JVM in one run of ten, so their bar sits above such stalls
#: and below a plan.
PLANNED_LONG_US = 40_000
LONG_STATEMENT = 2_000


class Agent:
    """One agent's writes and reads, each in a shape chosen by the caller."""

    def __init__(self, service: GraphService, rng: random.Random):
        self.service, self.rng = service, rng
        self.tasks: list[str] = []
        self.others: list[str] = []

    def capsule(self, kind: str | None = None) -> dict[str, Any]:
        kind = kind or self.rng.choice(["task", "decision", "constraint", "failure_pattern", "fact"])
        return {"project_id": self.rng.choice(PROJECTS), "kind": kind,
                "content": " ".join(self.rng.sample(WORDS, self.rng.randint(1, 12)))}

    def ingest(self, size: int) -> None:
        items = [self.capsule() for _ in range(size)]
        if self.tasks:
            items[0] = {**self.capsule("task"), "blocked_by": [self.rng.choice(self.tasks)]}
        if self.others and size > 1:
            items[-1] = {**items[-1], "supersedes": [self.rng.choice(self.others)]}
        for capsule_id, item in zip(self.service.ingest({"items": items})["ids"], items):
            (self.tasks if item["kind"] == "task" else self.others).append(capsule_id)

    def pack(self, fence: int, terms: list[str], budget: int, agent: str | None = None) -> None:
        body: dict[str, Any] = {"token_budget": budget}
        if agent is not None:
            body["agent"] = agent
        if fence in (1, 3):
            body["project_id"] = self.rng.choice(PROJECTS)
        if fence in (2, 3):
            body["project_prefix"] = self.rng.choice(PROJECTS).split("/")[0]
        if terms:
            body["terms"] = terms
        self.service.bootstrap(body)

    def recall(self, fence: int, terms: list[str], kinds: bool, limit: int) -> None:
        """memory_retrieve (SPEC §8) in one shape; a term taught an alias (`refund`) takes the
        statement's other way to the matches (cypher/retrieve/matches.cypher)."""
        body: dict[str, Any] = {"terms": terms, "limit": limit, "token_budget": 1500}
        if fence in (1, 3):
            body["project_id"] = self.rng.choice(PROJECTS)
        if fence in (2, 3):
            body["project_prefix"] = self.rng.choice(PROJECTS).split("/")[0]
        if kinds:
            body["kinds"] = self.rng.sample(["task", "decision", "constraint", "fact"], 2)
        self.service.retrieve(body)

    def terms(self, count: int, words_each: int) -> list[str]:
        return [" ".join(self.rng.sample(WORDS, words_each)) for _ in range(count)]

    def writes(self, edges: int) -> None:
        pairs = [tuple(self.rng.sample(self.tasks, 2)) for _ in range(edges)]
        self.service.relate({"add": [{"type": "SUPERSEDES", "from": a, "to": b} for a, b in pairs]})
        self.service.update(self.rng.choice(self.tasks), {"status": self.rng.choice(["open", "done"])})
        self.service.update(self.rng.choice(self.others), {"tier": "stale",
                                                           "valid_to": (NOW + timedelta(days=2)).isoformat()})
        self.service.tombstone([self.others.pop(self.rng.randrange(len(self.others)))])

    def claims(self, count: int) -> None:
        """Claims (SPEC §12) of every shape: by fence, terms and task id, renewals, refusals, releases."""
        for n in range(count):
            body: dict[str, Any] = {"agent": f"agent-{self.rng.randrange(4)}", "lease_s": self.rng.choice([10, 900])}
            if n % 3 == 1:
                body["project_prefix"] = self.rng.choice(PROJECTS).split("/")[0]
            if n % 3 == 2:
                body["task_id"] = self.rng.choice(self.tasks)
            if n % 2:
                body["terms"] = self.terms(n % 4 + 1, 1)
            # with a key, the pack statements run after the key's write: a plan of their own (warm-up)
            key = IdempotencyKey.parse(f"claim-{self.rng.random()}", caller="", field="Idempotency-Key") \
                if n % 4 == 3 else None
            try:
                self.service.claim(body, idempotency=key)
            except (Conflict, NotFound):
                pass
            try:
                self.service.release({"agent": body["agent"], "task_id": self.rng.choice(self.tasks)})
            except Conflict:
                pass

    def reads(self, ids: int, limit: int) -> None:
        self.service.get(self.rng.sample(self.tasks, ids))
        self.service.list({"project_prefix": "shop", "limit": limit})


def compiles(db) -> list[tuple[str, int]]:
    """Statements Neo4j's query statistics saw it compile (a hit costs 0.05-0.5 ms here)."""
    rows = db._driver.execute_query(
        "CALL db.stats.retrieve('QUERIES') YIELD data WITH data UNWIND data.invocations AS i "
        "WITH data.query AS query, i.elapsedCompileTimeInUs AS us "
        "WHERE us >= CASE WHEN size(query) > $long THEN $least_long ELSE $least END "
        "RETURN substring(query, 0, 80) AS query, us",
        least=PLANNED_US, least_long=PLANNED_LONG_US, long=LONG_STATEMENT).records
    return [(row["query"], row["us"]) for row in rows]


def duration_seconds(text: str) -> float:
    """A Neo4j duration setting ("10s", "5m", "1h", "500ms", or ISO-8601 "PT10S") in seconds."""
    text = text.strip().upper().removeprefix("PT")
    units = {"MS": 0.001, "S": 1, "M": 60, "H": 3600, "D": 86400}
    total, number = 0.0, ""
    rest = text
    while rest:
        digits = len(rest) - len(rest.lstrip("0123456789."))
        number, rest = rest[:digits], rest[digits:]
        unit = "MS" if rest.startswith("MS") else rest[:1] or "S"
        rest = rest[len(unit):] if rest else rest
        total += float(number or 0) * units[unit]
    return total


def test_no_request_shape_makes_neo4j_plan_again(db):
    interval = db._driver.execute_query(
        "SHOW SETTINGS YIELD name, value WHERE name = 'dbms.cypher.min_replan_interval' RETURN value").records[0][0]
    if duration_seconds(interval) < 300:
        pytest.skip(f"this Neo4j re-plans on statistics every {interval}; docs/design.md's Planning section asks "
                    "for dbms.cypher.min_replan_interval=5m, without which growth re-plans inside this test")
    service = GraphService(db, clock=fixed_clock(NOW))
    service.ensure_schema()
    agent = Agent(service, random.Random(7))
    for _ in range(40):  # the base store: large next to what the shapes below add
        agent.ingest(25)
    service.alias({"term": "refund", "aliases": ["chargeback"]})

    db._driver.execute_query("CALL db.clearQueryCaches()")  # as cold as a freshly started Neo4j
    warm_write_plans(db)  # what a start-up does (GraphService.ensure_schema, then warm)
    service.warm()
    for _ in range(12):  # one shape of everything
        agent.ingest(1)
        agent.ingest(2)  # a batch that supersedes
        for fence in range(4):
            agent.pack(fence, agent.terms(1, 1), 1500)
        agent.writes(1)
        agent.reads(1, 1)
        agent.claims(8)  # the fourth and the eighth take an idempotency key, the eighth with a fence
        agent.pack(0, [], 1500, agent="agent-1")
        agent.recall(0, ["ledger"], False, 10)
        agent.recall(0, ["refund"], False, 10)
    agent.ingest(60)  # one large batch too (its tally update compiled once more, in 2-9 ms, on first use)

    try:
        db._driver.execute_query("CALL db.stats.stop('QUERIES')")
    except Exception:  # not collecting: nothing to stop
        pass
    db._driver.execute_query("CALL db.stats.clear('QUERIES')")
    db._driver.execute_query("CALL db.stats.collect('QUERIES')")
    try:
        for fence in range(4):
            for count, words_each in ((0, 1), (2, 1), (3, 1), (9, 1), (30, 1), (1, 2), (2, 3), (64, 1)):
                for budget in (0, 7, 40, 1500, 99_999):
                    agent.pack(fence, agent.terms(count, words_each) if count <= 20 else
                               [agent.rng.choice(WORDS) + str(n) for n in range(count)], budget)
            for count, words_each in ((1, 1), (3, 1), (9, 1), (2, 2)):
                for kinds in (False, True):
                    for limit in (1, 50):
                        agent.recall(fence, agent.terms(count, words_each), kinds, limit)
                        agent.recall(fence, ["refund", *agent.terms(count - 1, words_each)], kinds, limit)
        for size in (2, 3, 11, 60, 2):
            agent.ingest(size)
            agent.writes(edges=size)
            agent.reads(ids=min(size, 12), limit=size * 8)
            agent.claims(size)
            for fence in range(4):
                agent.pack(fence, agent.terms(size % 5, 1), 1500, agent=f"agent-{size % 4}")
    finally:
        db._driver.execute_query("CALL db.stats.stop('QUERIES')")
    planned = compiles(db)
    assert planned == [], f"Neo4j planned again for a new request shape: {planned}"


def test_ready_only_once_the_pack_plans_are_warm(db):
    """/readyz's answer (GraphService.ready): a worker whose warm-up has not run is not ready; asking
    starts the warm-up in the background, and it turns ready when that is done."""
    import time

    service = GraphService(db, clock=fixed_clock(NOW))
    db._driver.execute_query("CALL db.clearQueryCaches()")
    assert service.ready() is False
    deadline = time.monotonic() + 120
    while not service.ready():
        assert time.monotonic() < deadline, "the warm-up never finished"
        time.sleep(0.05)
    assert not db.warming
    # warm now: both pack statements are cached, so a pack plans nothing
    db._driver.execute_query("CALL db.stats.clear('QUERIES')")
    db._driver.execute_query("CALL db.stats.collect('QUERIES')")
    try:
        service.bootstrap({"project_prefix": "shop", "terms": ["refund"]})
        service.bootstrap({})
    finally:
        db._driver.execute_query("CALL db.stats.stop('QUERIES')")
    assert compiles(db) == []


@pytest.fixture
def held_rewarm(db):
    """Start a re-warm whose end waits for the yielded event (a restarted Neo4j's warm-up); with a
    service given, that warm-up plans the service's reads first, as the real one does."""
    import threading

    previous, release = db.on_reconnect, threading.Event()

    def start(service: GraphService | None = None) -> threading.Event:
        def rewarm() -> None:
            if service is not None:
                service.warm(writes=False)
            release.wait(30)

        db.on_reconnect = rewarm
        db.rewarm()
        assert db.warming
        return release

    yield start
    release.set()
    db.on_reconnect = previous


def _bounded(seconds: float):
    import time

    from graphsvc.request_context import call_deadline

    return call_deadline.set(time.monotonic() + seconds)


INGEST = {"project_id": "warm", "kind": "fact", "content": "written during a re-warm"}


def test_a_call_during_a_rewarm_waits_for_it_within_its_deadline(db, held_rewarm):
    """A write asked while the plans are compiled again waits for that warm-up (not a 503 at once),
    and runs as soon as it ends."""
    import threading
    import time

    from graphsvc.request_context import call_deadline

    service = GraphService(db, clock=fixed_clock(NOW))
    service.bootstrap({})  # schema and plans in place
    release = held_rewarm()
    threading.Timer(0.5, release.set).start()
    token = _bounded(7)
    try:
        started = time.monotonic()
        written = service.ingest(INGEST)
        waited = time.monotonic() - started
    finally:
        call_deadline.reset(token)
    assert written["ids"] and waited >= 0.4
    assert not db.warming


def test_reads_pass_once_the_read_plans_are_made(db, held_rewarm):
    """The re-warm plans the reads first: a pack runs as soon as they are in, while a write still
    waits for the write plans."""
    import time

    from graphsvc.errors import Unavailable
    from graphsvc.request_context import call_deadline

    service = GraphService(db, clock=fixed_clock(NOW))
    service.bootstrap({})
    held_rewarm(service)
    deadline = time.monotonic() + 60
    while not all(service._planned[gate].is_set() for gate in ("pack-fenced", "pack-store", "retrieve", "digest")):
        assert time.monotonic() < deadline, "the read plans were never made"
        time.sleep(0.02)
    token = _bounded(5.0)  # room for the pack on a busy machine: past its bound it would be abandoned
    try:
        assert "ready" in service.bootstrap({})
        assert service.retrieve({"terms": ["warm"]})["outcome"]
        assert "counts" in service.digest({"project_id": "p"})
        assert db.warming
        with pytest.raises(Unavailable):
            service.ingest(INGEST)
    finally:
        call_deadline.reset(token)


def _hold_warm_call(service: GraphService, monkeypatch, name: str, matches=lambda data: True):
    """Stop the warm-up inside the unit that runs its own `service.<name>` call (those `matches` picks)
    until released. Returns (reached, release, the method as it was)."""
    import threading

    reached, release = threading.Event(), threading.Event()
    real = getattr(service, name)

    def held(data):
        from graphsvc.service import _warming_call

        if _warming_call.get() and matches(data):
            reached.set()
            release.wait(30)
        return real(data)

    monkeypatch.setattr(service, name, held)
    return reached, release, real


def _refused_within(seconds: float, call, *args) -> None:
    """`call(*args)` under a deadline of `seconds` is a 503 before that deadline has passed by much:
    it waited, bounded, for plans not yet made."""
    import time

    from graphsvc.errors import Unavailable
    from graphsvc.request_context import call_deadline

    token = _bounded(seconds)
    try:
        began = time.monotonic()
        with pytest.raises(Unavailable):
            call(*args)
        assert time.monotonic() - began < seconds + 0.5
    finally:
        call_deadline.reset(token)


def test_packs_pass_while_the_digest_plans_are_being_made(db, held_rewarm, monkeypatch):
    """Each route waits for its own plans only: with the re-warm held inside the digest's unit, a
    pack and a retrieve run, and a digest waits (bounded) for its plans."""
    import time

    from graphsvc.request_context import call_deadline

    service = GraphService(db, clock=fixed_clock(NOW))
    service.bootstrap({})
    in_digest, release, real_digest = _hold_warm_call(service, monkeypatch, "digest")
    held_rewarm(service)
    try:
        assert in_digest.wait(60), "the warm-up never reached the digest"
        deadline = time.monotonic() + 60
        while not (service._planned["pack-store"].is_set() and service._planned["retrieve"].is_set()):
            assert time.monotonic() < deadline, "the pack and retrieve plans were never made"
            time.sleep(0.02)
        assert not service._planned["digest"].is_set()
        token = _bounded(5.0)
        try:
            assert "ready" in service.bootstrap({})
            assert service.retrieve({"terms": ["warm"]})["outcome"]
        finally:
            call_deadline.reset(token)
        _refused_within(1.0, real_digest, {"project_id": "p"})
    finally:
        release.set()
    assert service._planned["digest"].wait(60)


def test_fenced_packs_pass_while_the_whole_store_pack_plans_are_being_made(db, held_rewarm, monkeypatch):
    """A pack waits for the plans of the section statement it runs: with the re-warm held inside the
    whole-store pack's unit, a fenced pack runs and a whole-store pack waits (bounded) for its plans."""
    from graphsvc.request_context import call_deadline

    service = GraphService(db, clock=fixed_clock(NOW))
    service.bootstrap({})
    in_store_pack, release, real_bootstrap = _hold_warm_call(service, monkeypatch, "bootstrap",
                                                             lambda data: "project_id" not in data)
    held_rewarm(service)
    try:
        assert in_store_pack.wait(60), "the warm-up never reached the whole-store pack"
        assert service._planned["pack-fenced"].wait(60)
        assert not service._planned["pack-store"].is_set()
        token = _bounded(5.0)
        try:
            assert "ready" in real_bootstrap({"project_id": "p"})
            assert "ready" in real_bootstrap({"project_prefix": "p", "terms": ["warm"]})
        finally:
            call_deadline.reset(token)
        _refused_within(1.0, real_bootstrap, {})
    finally:
        release.set()
    assert service._planned["pack-store"].wait(60)
    assert "ready" in real_bootstrap({})


def test_a_rewarm_longer_than_the_deadline_is_a_503(db, held_rewarm):
    """The wait is bounded: a call keeps part of its deadline to run, and past that it is refused
    (503 + Retry-After at the surfaces) while the warm-up goes on."""
    import time

    from graphsvc.errors import Unavailable
    from graphsvc.request_context import call_deadline

    service = GraphService(db, clock=fixed_clock(NOW))
    service.bootstrap({})
    release = held_rewarm()
    token = _bounded(2.0)
    try:
        started = time.monotonic()
        with pytest.raises(Unavailable):
            service.ingest(INGEST)
        waited = time.monotonic() - started
    finally:
        call_deadline.reset(token)
        release.set()
    assert 0.3 <= waited < 2.0  # waited for the warm-up, and kept WARM_WAIT_RESERVE of the deadline
    deadline = time.monotonic() + 10
    while db.warming and time.monotonic() < deadline:
        time.sleep(0.02)
    assert not db.warming


def test_writes_pass_once_the_write_plans_are_made(db, monkeypatch):
    """A re-warm plans the claims' pack reads (only a keyed claim needs them, seconds cold) after
    the write statements: a write goes through once those are in, while the re-warm goes on."""
    import threading
    import time

    from graphsvc.store import warmup

    release = threading.Event()
    monkeypatch.setattr(warmup, "warm_claim_pack_reads", lambda _db: release.wait(30))
    service = GraphService(db, clock=fixed_clock(NOW))
    service.bootstrap({})
    try:
        db.rewarm()  # what the first call after an outage starts: service.warm(writes=True)
        deadline = time.monotonic() + 120
        while not (service._warming_writes and service._planned["writes"].is_set()):
            assert time.monotonic() < deadline, "the write plans were never made"
            time.sleep(0.02)
        token = _bounded(5.0)
        try:
            assert db.warming  # held in the claims' pack reads
            assert service.ingest(INGEST)["ids"]
        finally:
            from graphsvc.request_context import call_deadline

            call_deadline.reset(token)
    finally:
        release.set()
    assert db.wait_warm(60)


def test_core_writes_pass_while_the_later_write_plans_are_being_made(db, monkeypatch):
    """The statements only sessions, aliases and claims run are planned last (warmup.LATER): with the
    re-warm held in that unit, an ingest runs and an alias waits (bounded) for its plans."""
    import threading
    import time

    from graphsvc.errors import Unavailable
    from graphsvc.request_context import call_deadline
    from graphsvc.store import warmup

    held, release = threading.Event(), threading.Event()
    real_warm = warmup.warm_write_plans

    def warm_write_plans(db_, after_a_change=None, part=None):
        if part == "later":
            held.set()
            release.wait(30)
        return real_warm(db_, after_a_change, part)

    monkeypatch.setattr(warmup, "warm_write_plans", warm_write_plans)
    service = GraphService(db, clock=fixed_clock(NOW))
    service.bootstrap({})
    try:
        db.rewarm()  # what the first call after an outage starts: service.warm(writes=True)
        assert held.wait(120), "the re-warm never reached the later write plans"
        deadline = time.monotonic() + 120
        while not service._planned["writes"].is_set():
            assert time.monotonic() < deadline, "the first write plans were never made"
            time.sleep(0.02)
        assert not service._planned["writes-later"].is_set()
        token = _bounded(5.0)
        try:
            assert service.ingest(INGEST)["ids"]
        finally:
            call_deadline.reset(token)
        token = _bounded(1.0)
        try:
            began = time.monotonic()
            with pytest.raises(Unavailable):
                service.alias({"term": "postgres", "aliases": ["pg"]})
            assert time.monotonic() - began < 1.5
        finally:
            call_deadline.reset(token)
    finally:
        release.set()
    assert db.wait_warm(120)
    assert service._planned["writes-later"].is_set()
    assert service.alias({"term": "postgres", "aliases": ["pg"]})
