"""An import creates its capsules with the maintained fields the file implies and refreshes only what
another writer can have made differ (graphsvc.store.transfer, pass 3): the stored state must equal a
recomputation (`graphsvc verify`) in every case, including a writer changing a capsule of the file
between its creation and the edges that depend on it."""

from __future__ import annotations

import json
from datetime import datetime, timezone
from typing import Any

import pytest

from graphsvc.clock import fixed_clock
from graphsvc.service import GraphService
from graphsvc.store.migrate import verify

NOW = datetime(2026, 12, 1, 12, 0, tzinfo=timezone.utc)
STAMP = "2026-12-01T11:00:00.000000000Z"


@pytest.fixture
def svc(db):
    return GraphService(db, clock=fixed_clock(NOW))


def capsule(seq: int, kind: str, status: str | None = None, tier: str = "active", tombstoned: bool = False,
            project: str = "p") -> dict[str, Any]:
    row = {"id": f"cap-{seq}", "seq": seq, "project_id": project, "kind": kind, "tier": tier,
           "headline": f"{kind} {seq}", "content": f"{kind} number {seq}", "created_at": STAMP, "updated_at": STAMP}
    if status is not None:
        row["status"] = status
    if tombstoned:
        row["tombstoned_at"] = STAMP
    return row


#: One capsule per rule of maintain/expected; the comment says what the file implies for it.
CAPSULES = [
    capsule(1, "task", "open"),                    # blocked by 2 (open): 1 open blocker, not ready
    capsule(2, "task", "open"),                    # ready
    capsule(3, "task", "done"),                    # blocks 4, but done: blocks nothing
    capsule(4, "task", "open"),                    # ready
    capsule(5, "task", "open", tombstoned=True),   # blocks 6, but tombstoned
    capsule(6, "epic", "open"),                    # ready
    capsule(7, "task", "open"),                    # superseded by 8: not ready; blocks 9 but superseded
    capsule(8, "decision", project="q"),           # counted in decisions of q
    capsule(9, "task", "open"),                    # ready
    capsule(10, "constraint"),                     # superseded by 11 only, which is tombstoned: counted
    capsule(11, "decision", tombstoned=True),      # not counted
    capsule(12, "constraint", tier="archived"),    # not counted
    capsule(13, "failure_pattern"),                # superseded by 14: a trap still
    capsule(14, "decision"),                       # counted
    capsule(15, "decision"),                       # superseded by 14: not counted
    capsule(16, "fact"),
]
EDGES = [("BLOCKS", 2, 1), ("BLOCKS", 3, 4), ("BLOCKS", 5, 6), ("BLOCKS", 7, 9),
         ("SUPERSEDES", 8, 7), ("SUPERSEDES", 11, 10), ("SUPERSEDES", 14, 13), ("SUPERSEDES", 14, 15)]


def lines() -> list[str]:
    out = [json.dumps({"capsule": c}) for c in CAPSULES]
    return out + [json.dumps({"edge": {"type": t, "from": f"cap-{a}", "to": f"cap-{b}"}}) for t, a, b in EDGES]


def stored(db) -> dict[str, dict[str, Any]]:
    return {r["id"]: dict(r) for r in db._driver.execute_query(
        "MATCH (c:Capsule) RETURN c.id AS id, c.superseded AS superseded, c.open_blockers AS open_blockers, "
        "c.ready AS ready, c.counted AS counted").records}


def tallies(db) -> dict[str, int]:
    """The pack sections' tallies (the digest's census tallies are `census_tallies`)."""
    return {r["key"]: r["listed"] for r in db._driver.execute_query(
        "MATCH (t:Tally) WHERE t.listed <> 0 RETURN t.key AS key, t.listed AS listed").records}


def census_tallies(db) -> dict[str, int]:
    return {r["key"]: r["listed"] for r in db._driver.execute_query(
        "MATCH (t:CensusTally) WHERE t.listed <> 0 RETURN t.key AS key, t.listed AS listed").records}


#: What SPEC §9 counts of CAPSULES once the file's edges are stored: the first state each is in.
CENSUS = {"task:current|p": 4, "task:blocked|p": 1, "task:tombstoned|p": 1, "task:superseded|p": 1, "epic:current|p": 1,
          "decision:current|q": 1, "decision:current|p": 1, "decision:tombstoned|p": 1, "decision:superseded|p": 1,
          "constraint:current|p": 2, "failure_pattern:superseded|p": 1, "fact:current|p": 1}


def test_an_import_creates_the_maintained_state_its_edges_imply(svc, db):
    assert svc.import_lines(lines())["capsules"] == len(CAPSULES)
    state = stored(db)
    assert {i for i, s in state.items() if s["superseded"]} == {"cap-7", "cap-13", "cap-15"}
    assert {i: s["open_blockers"] for i, s in state.items() if s["open_blockers"] is not None} == {
        "cap-1": 1, "cap-2": 0, "cap-3": 0, "cap-4": 0, "cap-5": 0, "cap-6": 0, "cap-7": 0, "cap-9": 0}
    assert {i for i, s in state.items() if s["ready"]} == {"cap-2", "cap-4", "cap-6", "cap-9"}
    assert {i: s["counted"] for i, s in state.items() if s["counted"] is not None} == {
        "cap-2": "ready", "cap-4": "ready", "cap-6": "ready", "cap-9": "ready", "cap-8": "decisions",
        "cap-10": "constraints", "cap-13": "traps", "cap-14": "decisions"}
    assert tallies(db) == {"ready|p": 4, "decisions|q": 1, "constraints|p": 1, "traps|p": 1, "decisions|p": 1}
    assert census_tallies(db) == CENSUS
    assert verify(db).clean


class AfterCapsules:
    """A progress bar that runs `write` once the capsule lines are stored, before any edge is."""

    def __init__(self, write):
        self.write, self.calls = write, 0

    def update(self, count: int) -> None:
        self.calls += 1
        if self.calls == 1:  # one chunk holds every capsule of the file
            self.write()


def test_a_writer_changing_an_edge_source_before_the_edge_is_stored_leaves_the_state_exact(svc, db):
    """The capsules are created counting the file's edges; before those edges exist, another writer
    tombstones 8 (the only live capsule superseding 7) and closes 2 (1's only open blocker). Neither
    write can reach 7 or 1 (no edge yet), so only the import's refresh of its edges' targets makes
    7 unsuperseded and ready, and 1 ready."""

    def meanwhile() -> None:
        svc.tombstone(["cap-8"])
        svc.update("cap-2", {"status": "done"})

    svc.import_lines(lines(), progress=AfterCapsules(meanwhile))
    state = stored(db)
    assert state["cap-7"]["superseded"] is False and state["cap-7"]["ready"] is True
    assert state["cap-1"]["open_blockers"] == 0 and state["cap-1"]["counted"] == "ready"
    assert state["cap-2"]["counted"] is None and state["cap-8"]["counted"] is None
    report = verify(db)
    assert report.clean, report


def test_an_import_stopped_before_its_edges_completes_on_a_re_run(svc, db):
    """Stopped once its capsules are stored (counting edges not stored yet), the re-run finds them
    already present, stores the edges and leaves the state a recomputation gives."""

    class Stop(Exception):
        pass

    def stop() -> None:
        raise Stop

    with pytest.raises(Stop):
        svc.import_lines(lines(), progress=AfterCapsules(stop))
    assert not verify(db).clean  # 7 counts as superseded, 1 as blocked: their edges are not stored yet
    answer = svc.import_lines(lines())
    assert answer["already_present"] == {"capsules": len(CAPSULES), "edges": 0}
    assert answer["edges"] == len(EDGES)
    assert verify(db).clean
    assert tallies(db) == {"ready|p": 4, "decisions|q": 1, "constraints|p": 1, "traps|p": 1, "decisions|p": 1}
    assert census_tallies(db) == CENSUS
