"""SPEC §5 tombstone: mark capsules retired, never delete them.

Idempotent: tombstoning twice keeps the FIRST `tombstoned_at` (the moment it was
retired is history, not the moment someone repeated the request). All ids are
checked before anything is written: one unknown id → 404 naming it, nothing marked.
`updated_at` is not bumped: retiring is not editing.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from neo4j import ManagedTransaction

from graphsvc.store import changes, maintain
from graphsvc.store.db import Database, run
from graphsvc.store.idempotency import Wrap, within
from graphsvc.store.reads import missing_error, parse_ids
from graphsvc.store.records import Visible


def _tombstone(tx: ManagedTransaction, ids: list[str], original: list[str], now: datetime,
               visible: Visible) -> dict[str, Any]:
    # A capsule the caller's key may not see is answered as if it did not exist (no existence leak).
    found = {r["id"] for r in run(tx, "capsules/lookup_state", ids=ids)
             if r["exists"] and (visible is None or visible(r["project_id"]))}
    error = missing_error(ids, found, original)
    if error:
        raise error
    rows = {r["id"]: r["already"] for r in run(tx, "capsules/tombstone", ids=ids, now=now)}
    newly = [capsule_id for capsule_id in ids if not rows[capsule_id]]
    if newly:
        # A tombstoned capsule stops being ready and stops blocking; a tombstoned superseder stops
        # superseding, so what it superseded may be live (and blocking) again.
        retired = [r["id"] for r in run(tx, "maintain/superseded_targets", ids=newly)]
        maintain.refresh(tx, superseded=retired, readiness=maintain.blocked_by_changes(tx, newly))
        changes.mark_capsules(tx, newly)  # watchers (SPEC §13): with what they superseded and blocked
    return {
        "tombstoned": [capsule_id for capsule_id in ids if not rows[capsule_id]],
        "already_tombstoned": [capsule_id for capsule_id in ids if rows[capsule_id]],
    }


def tombstone(db: Database, capsule_ids: list[str], now: datetime, wrap: Wrap | None = None,
              visible: Visible = None) -> dict[str, Any]:
    """Tombstone every id (all or nothing); report which were new and which already were."""
    ids = parse_ids(capsule_ids)
    return db.write(within(wrap, lambda tx: _tombstone(tx, ids, list(capsule_ids), now, visible)))
