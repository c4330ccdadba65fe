"""Schema upgrades and the maintained-state audit: `graphsvc migrate` and `graphsvc verify [--repair]`.

A store written before schema v2 has no kind labels and none of the fields graphsvc.store.maintain
keeps. `migrate` brings it to `SCHEMA_VERSION` in two phases, each resumable:

1. capsule pages in seq order (keyset), each page written in ONE transaction together with the
   progress marker (`SchemaVersion.pages_after`), so a crash loses at most the page in flight and
   a rerun starts after the last committed page;
2. the BLOCKS order, computed from scratch over every task/epic (graphsvc.core.order) under the
   BLOCKS-insertion lock, written in pages (each under the lock) and checked again until it holds;
   rerunning it writes only the rows that differ from a fresh computation.

Both are safe beside live writes (several workers start at once, one serves while another still
migrates): values are recomputed under each node's lock (`maintain.refresh`), the order under the
insertion lock (`_order_again`).

Then the version is recorded. Running it on a current store does nothing. `serve` runs it at
start-up; the CLI shows a progress bar.

`verify` recomputes every maintained field from the raw graph (maintain/expected; tokens in
Python), checks the order's invariant and recounts every tally; `repair=True` rewrites what drifted.
A v2 store becomes v3 by the same page rewrite: `maintain.refresh` sets each capsule's `counted`
and moves the tallies (idempotent: a page done twice moves nothing the second time). A v3 store
becomes v4 by a lighter page walk: only capsules holding a token past Lucene's 255 UTF-16 units
are refolded (their tokens are stored marked, graphsvc.store.maintain.stored_token), under each
node's lock and only if its text is still what was read; nothing else is written. A v4 store
becomes v5 by a walk over the handoff capsules alone: each records the `agent` of the session that
left it (graphsvc.store.sessions finds an agent's previous handoff on the capsules, which an export
carries, and not through the sessions, which it does not). The walks from older versions record it
on the handoffs of each page they rewrite. `verify` compares a handoff's agent with its session's. v5 also
swaps the term indexes without a page walk (`one_term_index`): the one full-text index over every
capsule is created and awaited online, then v4's five per kind family are dropped. A v5 store becomes
v6 by a page walk over every capsule: maintain/refresh_counted sets its `census` and adds it to the
census tallies a digest's counts read (idempotent, like the v3 walk); the walks from older versions
do the same on each page.

`verify` also checks the full-text index set against cypher/schema.cypher.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Callable

from neo4j import ManagedTransaction

from graphsvc.core.order import from_scratch
from graphsvc.store import cypher, maintain
from graphsvc.store.db import Database, run

PAGE = 5000

Progress = Callable[[int], None]


def _expected_row(record: Any) -> dict[str, Any]:
    return {
        "id": record["id"],
        "label": maintain.kind_label(record["kind"]),
        "tokens": maintain.folded_tokens(record["headline"], record["content"]),
        "superseded": record["superseded"],
        "open_blockers": record["open_blockers"],
        "ready": record["ready"],
    }


def schema_state(db: Database) -> dict[str, Any]:
    return dict(db.query("maintain/schema_version")[0])


def _rewrite(tx: ManagedTransaction, page: list[Any]) -> None:
    """Kind labels and tokens for these capsules, then their superseded/readiness by `maintain.refresh`.

    The refresh statements lock each node before computing its value, so a migration or a repair
    running beside live writes (another worker already serving) never overwrites a fresher value.
    """
    run(tx, "maintain/write_page", rows=[{"id": r["id"], "label": maintain.kind_label(r["kind"]),
                                          "tokens": maintain.folded_tokens(r["headline"], r["content"])}
                                         for r in page])
    ids = [r["id"] for r in page]
    maintain.refresh(tx, superseded=ids, readiness=[r["id"] for r in page if r["kind"] in ("task", "epic")])


def _record_agents(tx: ManagedTransaction, page: list[Any]) -> None:
    """v5: the page's handoffs record the agent of the session that left them."""
    handoffs = [r["id"] for r in page if r["kind"] == "handoff"]
    if handoffs:
        run(tx, "maintain/write_handoff_agents", ids=handoffs)


def _migrate_page(tx: ManagedTransaction, after: int) -> tuple[int, int]:
    page = run(tx, "maintain/expected", after=after, limit=PAGE)
    if page:
        _rewrite(tx, page)
        _record_agents(tx, page)
        after = page[-1]["seq"]
    run(tx, "maintain/set_schema_version", changes={"pages_after": after})
    return len(page), after


def _mark_long_tokens_page(tx: ManagedTransaction, after: int) -> tuple[int, int]:
    """v3 -> v4: refold only the capsules holding a token long enough to change form (stored_token)."""
    page = run(tx, "maintain/long_tokens_page", after=after, limit=PAGE)
    rows = []
    for record in page:
        text = record["text"]
        if text is not None:
            tokens = maintain.folded_tokens(text["headline"], text["content"])
            if tokens != text["tokens"]:
                rows.append({"id": text["id"], "headline": text["headline"], "content": text["content"],
                             "tokens": tokens})
    if rows:
        run(tx, "maintain/write_tokens", rows=rows)
    if page:
        after = page[-1]["seq"]
    run(tx, "maintain/set_schema_version", changes={"pages_after": after})
    if page:  # after a change (the marker's), as in _census_page
        _record_agents(tx, page)
        run(tx, "maintain/refresh_counted", ids=[r["id"] for r in page])  # v6: `census` and its tallies
    return len(page), after


def _census_page(tx: ManagedTransaction, after: int) -> tuple[int, int]:
    """v4/v5 -> v6: one page of capsules gains its `census` and is added to the census tallies
    (maintain/refresh_counted: under each node's lock, and a page done twice moves nothing); its
    handoffs record their session's agent (v5; idempotent on a v5 store)."""
    page = run(tx, "maintain/census_page", after=after, limit=PAGE)
    if page:
        after = page[-1]["seq"]
    # The marker first (one transaction either way): refresh_counted then runs after a change, the
    # transaction state the warm-up plans it in (graphsvc.store.warmup.ONLY).
    run(tx, "maintain/set_schema_version", changes={"pages_after": after})
    if page:
        _record_agents(tx, page)
        run(tx, "maintain/refresh_counted", ids=[r["id"] for r in page])
    return len(page), after


def _term_indexes(db: Database) -> tuple[list[str], dict[str, str]]:
    """The full-text indexes cypher/schema.cypher creates, and the store's full-text indexes with their state."""
    wanted = re.findall(r"CREATE FULLTEXT INDEX (\w+)", cypher.load("schema"))
    return wanted, {r["name"]: r["state"] for r in db.query("maintain/fulltext_indexes")}


def term_index_problems(db: Database) -> list[str]:
    """How the store's full-text indexes differ from the ones cypher/schema.cypher creates ([] = none)."""
    wanted, found = _term_indexes(db)
    problems = [f"full-text index {name} is missing" for name in wanted if name not in found]
    problems += [f"full-text index {name} is {found[name]}, not ONLINE" for name in wanted
                 if name in found and found[name] != "ONLINE"]
    problems += [f"full-text index {name} is not in the schema" for name in sorted(set(found) - set(wanted))]
    return problems


def one_term_index(db: Database) -> None:
    """v4 -> v5: the one full-text index `capsule_terms` instead of v4's five, one per kind family.

    Each index a transaction touches costs Lucene a refresh at commit (~10 ms of Neo4j CPU), so an
    ingest of mixed kinds paid it up to five times. The schema creates `capsule_terms` (idempotent,
    then awaited online with a bound); v4's indexes are dropped only once it is online, so a v5 pack
    with terms never lacks its index. Every statement is idempotent: an interrupted step is redone.
    """
    db.apply_schema()
    wanted, found = _term_indexes(db)
    waiting = [f"full-text index {name} is {found.get(name, 'missing')}" for name in wanted
               if found.get(name) != "ONLINE"]
    if waiting:
        raise RuntimeError(f"{'; '.join(waiting)}: v4's term indexes stay until it is online; "
                           "run `graphsvc migrate` again once it is")
    db.apply_schema("maintenance/drop_kind_term_indexes")


def _read_dag(tx: ManagedTransaction) -> tuple[dict[int, int | None], dict[int, dict[int, bool]]]:
    """Every task/epic seq with its stored ord, and its outgoing BLOCKS edges {to: marked}."""
    ords: dict[int, int | None] = {}
    out: dict[int, dict[int, bool]] = {}
    after = 0
    while True:
        page = run(tx, "order/all_dag", after=after, limit=PAGE)
        for r in page:
            ords[r["seq"]] = r["ord"]
            out[r["seq"]] = {target: marked for target, marked in r["out"]}
        if len(page) < PAGE:
            return ords, out
        after = page[-1]["seq"]


def _edges(out: dict[int, dict[int, bool]]) -> list[tuple[int, int, bool]]:
    """Every BLOCKS edge as (from, to, marked)."""
    return [(a, b, marked) for a, targets in out.items() for b, marked in targets.items()]


def _order_rows(ords: dict[int, int | None], out: dict[int, dict[int, bool]]) -> list[dict[str, Any]]:
    """The rows of a from-scratch order that differ from what is stored (ord or an edge's mark).

    Kahn's priority is the stored ord where there is one, so what is in order keeps its place
    and a repair rewrites little."""
    edges = [(a, b) for a, targets in out.items() for b in targets]
    priority = {seq: value if value is not None else seq for seq, value in ords.items()}
    ord_of, marked = from_scratch(ords, edges, priority=priority)
    marks: dict[int, list[int]] = {}
    for a, b in marked:
        marks.setdefault(a, []).append(b)
    rows = []
    for seq in sorted(ord_of):
        wanted = sorted(marks.get(seq, []))
        stored = sorted(b for b, is_marked in out.get(seq, {}).items() if is_marked)
        if ords.get(seq) != ord_of[seq] or wanted != stored:
            rows.append({"seq": seq, "ord": ord_of[seq], "marked": wanted})
    return rows


def _order_again(db: Database, attempts: int = 5) -> None:
    """The BLOCKS order from scratch, written in pages of PAGE rows, each under the insertion lock.

    One transaction for the whole order outgrew Neo4j's transaction memory at 1M capsules
    (MemoryPoolOutOfMemoryError), so the order is computed under the lock, written in pages (only
    the rows that differ from what is stored), then its invariant is checked under the lock: an
    insertion that ran between two pages (a worker already serving) saw a half-written order, so
    while the check fails the order is recomputed (priority: the stored ords, so little moves).
    """
    def plan(tx: ManagedTransaction, first: bool) -> list[dict[str, Any]]:
        run(tx, "order/lock")
        ords, out = _read_dag(tx)
        if not first and not _check_order(ords, _edges(out)):
            return []
        return _order_rows(ords, out)

    def write(tx: ManagedTransaction, rows: list[dict[str, Any]]) -> None:
        run(tx, "order/lock")
        run(tx, "order/write_page", rows=rows)

    for attempt in range(attempts):
        rows = db.write(lambda tx: plan(tx, attempt == 0))
        if not rows and attempt > 0:
            return
        for start in range(0, len(rows), PAGE):
            db.write(lambda tx, chunk=rows[start:start + PAGE]: write(tx, chunk))
    raise RuntimeError(f"the BLOCKS order did not settle after {attempts} passes (BLOCKS edges kept being "
                       "inserted meanwhile); run `graphsvc verify --repair` when writes are quieter")


def migrate(db: Database, progress: Progress | None = None) -> dict[str, Any]:
    """Bring the store to SCHEMA_VERSION; returns what it did ({"from", "to", "capsules"})."""
    state = schema_state(db)
    if state["version"] == maintain.SCHEMA_VERSION and state["migrating_to"] is None:
        return {"from": state["version"], "to": maintain.SCHEMA_VERSION, "capsules": 0}
    db.write(lambda tx: run(tx, "maintain/set_schema_version",
                            changes={"migrating_to": maintain.SCHEMA_VERSION}))
    # A migration another version left half done restarts from the first page: its pages hold that
    # version's fields (every page rewrite is idempotent, so redoing them costs time only).
    after = (state["pages_after"] or 0) if state["migrating_to"] == maintain.SCHEMA_VERSION else 0
    done = 0
    # From v5 every capsule gains its census (and from v4 handoffs their agent too); from v3 long
    # tokens change form too; older stores get every maintained field (and the order). Each page
    # walk records the agents of its handoffs and sets the census of its capsules.
    page_walk = {5: _census_page, 4: _census_page, 3: _mark_long_tokens_page}.get(state["version"], _migrate_page)
    with db.longer_timeout():
        while True:
            count, after = db.write(lambda tx: page_walk(tx, after))
            done += count
            if progress and count:
                progress(count)
            if count < PAGE:
                break
        if page_walk is _migrate_page:
            _order_again(db)
        one_term_index(db)
    db.write(lambda tx: (run(tx, "order/lock"),  # the lock node exists before the first BLOCKS insertion
                         run(tx, "maintain/set_schema_version", changes={
                             "version": maintain.SCHEMA_VERSION, "migrating_to": None, "pages_after": None})))
    return {"from": state["version"] or 1, "to": maintain.SCHEMA_VERSION, "capsules": done}


@dataclass
class Drift:
    """What `verify` found: per maintained field, the ids whose stored value differs."""

    capsules: int = 0
    fields: dict[str, list[str]] = field(default_factory=dict)
    order: list[str] = field(default_factory=list)
    #: "section|project_id" keys whose stored tally differs from the recount of their capsules
    tallies: list[str] = field(default_factory=list)
    #: how the full-text indexes differ from the schema's (term_index_problems)
    indexes: list[str] = field(default_factory=list)

    @property
    def clean(self) -> bool:
        return not self.fields and not self.order and not self.tallies and not self.indexes

    def add(self, name: str, capsule_id: str) -> None:
        self.fields.setdefault(name, []).append(capsule_id)


_COMPARED = (("superseded", "stored_superseded"), ("open_blockers", "stored_open_blockers"),
             ("ready", "stored_ready"), ("counted", "stored_counted"),
             ("census", "stored_census"))


def _agent_drifted(record: Any) -> bool:
    """A handoff whose `agent` is not its session's (v5; a handoff without a session has none to compare)."""
    return record["session_agent"] is not None and record["agent"] != record["session_agent"]


def _tally_drift(db: Database) -> list[str]:
    """Keys whose stored tally differs from the count of capsules whose `counted` names it (0 = absent)."""
    stored = {r["key"]: r["listed"] for r in db.query("maintain/tallies")}
    counted = {r["key"]: r["listed"] for r in db.query("maintain/counted_by_key")}
    return sorted(key for key in set(stored) | set(counted) if stored.get(key, 0) != counted.get(key, 0))


def _recount(tx: ManagedTransaction, keys: list[str]) -> None:
    for key in sorted(keys):
        section, project_id = key.split("|", 1)
        run(tx, "maintain/recount_tally", section=section, project_id=project_id)


def _check_order(ords: dict[int, int | None], edges: list[tuple[int, int, bool]]) -> list[str]:
    problems = []
    missing = sorted(seq for seq, value in ords.items() if value is None)
    if missing:
        problems.append(f"{len(missing)} task/epic capsule(s) have no ord (first: cap-{missing[0]})")
    values = [value for value in ords.values() if value is not None]
    if sorted(values) != sorted(seq for seq, value in ords.items() if value is not None) or len(set(values)) != len(values):
        problems.append("the ords are not a permutation of the task/epic seqs")
    for a, b, marked in edges:
        if not marked and (ords.get(a) is None or ords.get(b) is None or ords[a] >= ords[b]):  # type: ignore[operator]
            problems.append(f"unmarked BLOCKS edge cap-{a}->cap-{b} goes against the order")
            break
    return problems


def verify(db: Database, repair: bool = False, progress: Progress | None = None) -> Drift:
    """Recompute every maintained field from scratch and compare; with `repair`, rewrite the drift."""
    drift = Drift()
    after = 0
    with db.longer_timeout():
        while True:
            page = db.query("maintain/expected", after=after, limit=PAGE)
            fix = []
            for r in page:
                expected = _expected_row(r)
                wrong = [name for name, stored in _COMPARED if r[name] != r[stored]]
                if r["tokens"] != expected["tokens"]:
                    wrong.append("tokens")
                if expected["label"] not in r["labels"]:
                    wrong.append("label")
                if _agent_drifted(r):
                    wrong.append("agent")
                for name in wrong:
                    drift.add(name, r["id"])
                if wrong:
                    fix.append(r)
            drift.capsules += len(page)
            if repair and fix:
                db.write(lambda tx: (_rewrite(tx, fix), _record_agents(tx, fix)))
            if progress and page:
                progress(len(page))
            if len(page) < PAGE:
                break
            after = page[-1]["seq"]
        ords, out = db.read(_read_dag)
        drift.order = _check_order(ords, _edges(out))
        if repair and drift.order:
            _order_again(db)
        drift.tallies = _tally_drift(db)  # after the page repairs, which move tallies themselves
        if repair and drift.tallies:
            db.write(lambda tx: _recount(tx, drift.tallies))
        drift.indexes = term_index_problems(db)
        if repair and drift.indexes:
            one_term_index(db)
    return drift
