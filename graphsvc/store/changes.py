"""Change markers (SPEC §13): what lets a watcher know, from Neo4j, that a pack may have changed.

Neo4j Community has no change-data capture, so every write transaction of the store records the
projects it touched itself: `mark(tx, project_ids)` bumps one `(:ProjectChange {project_id, seq,
changed_at_ms})` node per project, in a transaction of its own once the write has committed
(graphsvc.store.db.after_commit: a background thread per process, which merges a burst of marks
into one transaction): a rolled-back write leaves none, and a watcher woken by a marker reads a
store that already holds the write. Each service process runs one
poller (graphsvc.surfaces.watching) that reads the markers changed since its cursor
(`changed_since`) while it has watchers, and wakes the watchers whose fence holds a changed
project. Because the signal lives in Neo4j, a write through any worker or service instance wakes
watchers on every other one.

What a write marks is a superset of the projects whose packs it can change (`mark_capsules`):
a capsule's own project, and those of what it blocks, supersedes, and what those block. Too much
costs a watcher one pack computation that finds nothing new; too little would leave it asleep.

Contention: a marker is one node per project, and whoever bumps it holds its lock until commit.
Bumped inside the write, it would hold every write of a project in line through the write's commit,
Lucene's refresh of the full-text index included (~10 ms), and sixteen agents claiming in one
project would queue there. Bumped in a transaction of its own, the lock lives for that small
transaction only, and the write answers without waiting for it. The price: a process that dies between the write's
commit and the marker's leaves the write unmarked, and its watchers learn of it at their next wake
(a later write, an instant, or wait_s).

Markers are not data: they are not exported (export reads capsules, edges and aliases), an
import makes its own through its write transactions, `graphsvc verify` does not read them (no
answer depends on their values, only on whether they moved), and a store without any simply has
had no write since they were introduced. `changed_at_ms` is Neo4j's clock, not the service's,
so service instances with skewed clocks agree on it.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Iterable

from neo4j import ManagedTransaction

from graphsvc.store.db import Database, after_commit, run

__all__ = ["affected_projects", "changed_since", "mark", "mark_capsules", "next_instant"]


def mark(tx: ManagedTransaction, project_ids: Iterable[str]) -> None:
    """Record that packs of these projects may have changed, once `tx` has committed."""
    wanted = sorted({project_id for project_id in project_ids if project_id})
    if wanted:
        after_commit(tx, "changes/mark", project_ids=wanted)


def affected_projects(tx: ManagedTransaction, capsule_ids: Iterable[str]) -> list[str]:
    """The projects whose packs a change to these capsules may change (cypher/changes/affected)."""
    wanted = sorted(set(capsule_ids))
    if not wanted:
        return []
    return [r["project_id"] for r in run(tx, "changes/affected", ids=wanted)]


def mark_capsules(tx: ManagedTransaction, capsule_ids: Iterable[str], project_ids: Iterable[str] = ()) -> None:
    """`mark` the projects affected by a change to these capsules (as they stand in `tx`), plus `project_ids`."""
    mark(tx, [*affected_projects(tx, capsule_ids), *project_ids])


def changed_since(db: Database, since_ms: int | None, lookback_ms: int) -> tuple[int, list[tuple[str, int, int]]]:
    """Neo4j's clock now (ms) and the (project_id, seq, changed_at_ms) of every marker changed at or
    after `since_ms - lookback_ms` (`since_ms` None: Neo4j's now)."""
    record = db.query("changes/since", since_ms=since_ms, lookback_ms=lookback_ms)[0]
    return record["now_ms"], [(project_id, seq, at) for project_id, seq, at in record["changes"]]


def next_instant(db: Database, scopes: list[str] | None, now: datetime) -> datetime | None:
    """The earliest `valid_to` or `lease_until` after `now` of a live capsule in the scopes (project ids
    or prefixes, each sought as a prefix: a superset), or in the whole store for None; None when there is none."""
    if scopes is None:
        instants: list[Any] = db.query("changes/next_instant_store", now=now)[0]["instants"]
    else:
        instants = db.query("changes/next_instant_fenced", scopes=sorted(set(scopes)), now=now)[0]["instants"]
    found = [value.to_native() if hasattr(value, "to_native") else value for value in instants if value is not None]
    return min(found, default=None)
