"""Paths that delete capsules keep every other capsule's maintained state true, in their transaction.

`graphsvc demo --reset` deletes a project subtree; `transfer.remove_imported` backs an import out.
A capsule outside that the deleted ones superseded is no longer superseded, one they blocked may be
ready: `graphsvc verify` (a recomputation of every maintained field) must find nothing to repair.
"""

from __future__ import annotations

from datetime import datetime, timezone

import pytest

from graphsvc.clock import fixed_clock
from graphsvc.service import GraphService
from graphsvc.store import transfer
from graphsvc.store.maintain import delete_project_tree
from graphsvc.store.migrate import verify

NOW = datetime(2026, 12, 6, 12, 0, tzinfo=timezone.utc)


def outside_state(svc: GraphService) -> tuple[str | None, list[str]]:
    pack = svc.bootstrap({"project_id": "other"})
    return pack["ready"].get("next_action", {}).get("id"), [row["id"] for row in pack.get("decisions", [])]


def test_deleting_a_project_tree_refreshes_what_it_superseded_and_blocked(db):
    svc = GraphService(db, clock=fixed_clock(NOW))
    outside = svc.ingest({"items": [{"project_id": "other", "kind": "task", "content": "Outside task"},
                                    {"project_id": "other", "kind": "decision", "content": "Old rule"}]})["ids"]
    svc.ingest({"items": [
        {"project_id": "shop/api", "kind": "task", "content": "Blocker", "blocks": [outside[0]]},
        {"project_id": "shop", "kind": "decision", "content": "New rule", "supersedes": [outside[1]]},
    ]})
    assert outside_state(svc) == (None, [])  # blocked, superseded

    assert db.write(lambda tx: delete_project_tree(tx, "shop")) == 2
    assert outside_state(svc) == (outside[0], [outside[1]])
    assert verify(db).clean


# A project id may hold the ':' a census name holds: the tallies are still told apart.
@pytest.mark.parametrize("project", ["imported", "team:imported"])
def test_undoing_an_import_refreshes_what_its_capsules_superseded_and_blocked(db, project):
    svc = GraphService(db, clock=fixed_clock(NOW))
    outside = svc.ingest({"items": [{"project_id": "other", "kind": "task", "content": "Outside task"},
                                    {"project_id": "other", "kind": "decision", "content": "Old rule"}]})["ids"]
    lines = ['{"capsule": {"id": "cap-90", "seq": 90, "project_id": "%s", "kind": "task", "tier": "active", '
             '"headline": "Imported task", "content": "Imported task", "status": "open", '
             '"created_at": "2026-12-01T00:00:00.000000000Z", "updated_at": "2026-12-01T00:00:00.000000000Z"}}\n' % project,
             '{"capsule": {"id": "cap-91", "seq": 91, "project_id": "%s", "kind": "decision", "tier": "active", '
             '"headline": "Imported rule", "content": "Imported rule", '
             '"created_at": "2026-12-01T00:00:00.000000000Z", "updated_at": "2026-12-01T00:00:00.000000000Z"}}\n' % project]
    svc.import_lines(lines)
    # agents wrote edges from the imported capsules to others meanwhile
    svc.relate({"add": [{"type": "BLOCKS", "from": "cap-90", "to": outside[0]},
                        {"type": "SUPERSEDES", "from": "cap-91", "to": outside[1]}]})
    assert outside_state(svc) == (None, [])

    transfer.remove_imported(db, ["cap-90", "cap-91"])
    assert outside_state(svc) == (outside[0], [outside[1]])
    assert verify(db).clean
