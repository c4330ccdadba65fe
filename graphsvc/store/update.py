"""SPEC §5 update: change status, tier, valid_to, headline or content of one capsule.

Decisions (documented in docs/capsules.md):
- `updated_at` is bumped to the request clock on every successful update.
- `status` exists only on task/epic capsules; sending it for another kind is a 422.
- `content` without `headline`: the headline is re-derived from the new content
  only if the stored headline is the one derived from the old content (i.e. the
  author never chose one); a headline someone wrote on purpose is kept.
- An explicit `null` is rejected (422): removing the expiry is `clear_valid_to: true`,
  so a stray null can never silently erase a field.
- Updating a tombstoned capsule is a 409 Conflict: the request is well-formed but
  the capsule is retired; tombstones are final, ingest a new capsule instead.
Unknown id → 404 naming it. The read-check-write happens in one transaction.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from neo4j import ManagedTransaction

from graphsvc.store import maintain
from graphsvc.store.changes import mark_capsules
from graphsvc.store.db import Database, run
from graphsvc.store.idempotency import Wrap, within
from graphsvc.errors import Conflict, InvalidInput, NotFound
from graphsvc.models import DAG_KINDS, CapsuleUpdate, check_capsule_id, derive_headline
from graphsvc.store.records import Visible, from_record

_EDITABLE = ("status", "tier", "valid_to", "headline", "content")


def valid_id(capsule_id: Any) -> str:
    try:
        return check_capsule_id(capsule_id) if isinstance(capsule_id, str) else check_capsule_id("")
    except ValueError as exc:
        raise InvalidInput(f"id: {exc}", field="id") from None


def _changes(upd: CapsuleUpdate, kind: str, headline: str, content: str, now: datetime) -> dict[str, Any]:
    for name in _EDITABLE:
        if name in upd.model_fields_set and getattr(upd, name) is None:
            hint = "; send clear_valid_to: true to remove the expiry" if name == "valid_to" else ""
            raise InvalidInput(f"{name}: must not be null (omit it to leave it unchanged){hint}", field=name)
    if upd.status is not None and kind not in DAG_KINDS:
        raise InvalidInput(f"status: only task and epic capsules have a status, this one is a '{kind}'",
                           field="status")
    changes: dict[str, Any] = {name: getattr(upd, name) for name in _EDITABLE if getattr(upd, name) is not None}
    if upd.clear_valid_to:
        changes["valid_to"] = None  # SET c += {valid_to: null} removes the property
    if upd.content is not None and upd.headline is None and headline == derive_headline(content):
        changes["headline"] = derive_headline(upd.content)
    changes["updated_at"] = now
    return changes


def _update(tx: ManagedTransaction, capsule_id: str, upd: CapsuleUpdate, now: datetime,
            visible: Visible, provenance: dict[str, str]) -> dict[str, Any]:
    found = run(tx, "capsules/lookup_for_update", id=capsule_id)
    # A capsule the caller's key may not see is answered as if it did not exist (no existence leak).
    if not found or (visible is not None and not visible(found[0]["project_id"])):
        raise NotFound(f"no capsule with id {capsule_id}", field="id")
    current = found[0]
    if current["tombstoned_at"] is not None:
        raise Conflict(f"{capsule_id} is tombstoned and can no longer change; ingest a new capsule "
                       f"(optionally with supersedes: [\"{capsule_id}\"]) instead", field="id")
    changes = _changes(upd, current["kind"], current["headline"], current["content"], now)
    if "headline" in changes or "content" in changes:
        changes["tokens"] = maintain.folded_tokens(changes.get("headline", current["headline"]),
                                                   changes.get("content", current["content"]))
    # The last writer replaces the previous one (its `written_by`); the operator (auth off) clears it.
    run(tx, "capsules/update", id=capsule_id, changes={**changes, **provenance})
    # done/open changes its own readiness and whether it blocks others; tier which section it counts in
    blocked = maintain.blocked_by_changes(tx, [capsule_id]) if "status" in changes else []
    maintain.refresh(tx, readiness=blocked, touched=[capsule_id])
    mark_capsules(tx, [capsule_id])  # watchers (SPEC §13): its project and what it blocks
    return from_record(run(tx, "capsules/get_many", ids=[capsule_id])[0], now, visible)


def update(db: Database, capsule_id: str, upd: CapsuleUpdate, now: datetime,
           wrap: Wrap | None = None, visible: Visible = None,
           provenance: dict[str, str] | None = None) -> dict[str, Any]:
    """Apply the update and return the full capsule as get would show it."""
    capsule_id = valid_id(capsule_id)
    return db.write(within(wrap, lambda tx: _update(tx, capsule_id, upd, now, visible, provenance or {})))
