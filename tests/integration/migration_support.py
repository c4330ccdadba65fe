"""Migration helpers shared by test_maintained_state.py and test_upgrade.py: a page step of
graphsvc.store.migrate that crashes on a chosen call (an interrupted migration), and stores left
as schema v5 left them (no `census` and no census tallies: what v6 adds) and as schema v4 left them
(also the two parts v5 changes: the handoffs' agent and the term indexes)."""

from __future__ import annotations

from typing import Any

import pytest

from graphsvc.store import migrate as migrate_module


class CrashingPage:
    """Stands in for migrate's page step `name` (e.g. "_migrate_page"): records the `after` of each
    call in `calls` and raises on call number `crash_on` (1-based), running the real step otherwise."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, name: str, crash_on: int):
        self.real = getattr(migrate_module, name)
        self.calls: list[int] = []
        self.crash_on: int | None = crash_on
        monkeypatch.setattr(migrate_module, name, self)

    def __call__(self, tx: Any, after: int) -> Any:
        self.calls.append(after)
        if len(self.calls) == self.crash_on:
            raise RuntimeError(f"simulated crash while writing page {self.crash_on}")
        return self.real(tx, after)

    def heal(self) -> None:
        """No more crashes, and `calls` starts again (the re-run's own)."""
        self.crash_on = None
        self.calls.clear()


def as_v5(db) -> None:
    """Leave the store as schema v5 would have: no `census` on capsules, no census tallies, version 5."""
    run = db._driver.execute_query
    run("MATCH (c:Capsule) REMOVE c.census")
    run("MATCH (t:CensusTally) DETACH DELETE t")
    run("MATCH (v:SchemaVersion {name: 'graphsvc'}) SET v.version = 5")


def as_v4(db) -> None:
    """Leave the store as schema v4 would have: as v5, and no `agent` on handoffs, version 4, v4's session index."""
    as_v5(db)
    run = db._driver.execute_query
    run("MATCH (h:Handoff) REMOVE h.agent")
    run("MATCH (v:SchemaVersion {name: 'graphsvc'}) SET v.version = 4")
    run("DROP INDEX handoff_agent_project IF EXISTS")
    run("CREATE INDEX session_agent_project IF NOT EXISTS FOR (s:Session) ON (s.agent, s.project_id)")


#: Schema v4's full-text term indexes (one per kind family) and the labels each held.
V4_TERM_INDEXES = {"constraint_terms": "Constraint", "decision_terms": "Decision",
                   "failure_pattern_terms": "FailurePattern", "task_terms": "Task|Epic",
                   "other_terms": "Fact|Procedure|Doc|Capability|Brainstorm|Handoff"}


def fulltext_index_names(db) -> set[str]:
    return {r["name"] for r in db._driver.execute_query("SHOW FULLTEXT INDEXES YIELD name").records}


def as_v4_left_the_indexes(db) -> None:
    """The term indexes as schema v4 left a store: five, one per kind family, and no capsule_terms."""
    run = db._driver.execute_query
    run("DROP INDEX capsule_terms IF EXISTS")
    for name, labels in V4_TERM_INDEXES.items():
        run(f"CREATE FULLTEXT INDEX {name} IF NOT EXISTS FOR (c:{labels}) ON EACH [c.tokens, c.project_id] "
            "OPTIONS {indexConfig: {`fulltext.analyzer`: 'whitespace'}}")
    run("CALL db.awaitIndexes(60)")
    as_v4_left_the_census(db)


def as_v4_left_the_census(db) -> None:
    """No `census` and no census tallies (v6's), version 4; everything else as it is."""
    as_v5(db)
    db._driver.execute_query("MATCH (v:SchemaVersion {name: 'graphsvc'}) SET v.version = 4")
