"""SPEC §5 relate: add and remove BLOCKS / SUPERSEDES edges between existing capsules.

Everything is checked before anything is written, and all changes commit in ONE
transaction: an unknown id (in add or remove — most likely a typo), a BLOCKS edge
touching a non-task/epic capsule, or the same edge both added and removed is a
422 naming `add[i].from` / `remove[i].to` etc. Adding an edge that already exists
and removing one that does not are no-ops, reported as `already_present` /
`not_present` so the caller sees exactly what changed. Edges may touch tombstoned
capsules (a tombstoned superseder does not count, SPEC §1, so this is harmless).
A BLOCKS cycle is allowed: the ready set fails closed on it (SPEC §3).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from neo4j import ManagedTransaction

from graphsvc.store import blocks_order, changes, maintain
from graphsvc.store.db import Database, run
from graphsvc.store.idempotency import Wrap, within
from graphsvc.store.records import Visible
from graphsvc.errors import InvalidInput
from graphsvc.models import DAG_KINDS, Edge, RelateRequest


def _key(edge: Edge) -> tuple[str, str, str]:
    return (edge.type, edge.from_id, edge.to_id)


def _as_json(key: tuple[str, str, str]) -> dict[str, str]:
    return {"type": key[0], "from": key[1], "to": key[2]}


def _check(req: RelateRequest, kinds: dict[str, str]) -> None:
    removing = {_key(edge) for edge in req.remove}
    for section, edges in (("add", req.add), ("remove", req.remove)):
        for index, edge in enumerate(edges):
            for end, capsule_id in (("from", edge.from_id), ("to", edge.to_id)):
                if capsule_id not in kinds:
                    raise InvalidInput(f"{section}[{index}].{end}: {capsule_id} does not exist; edges join stored "
                                       "capsules only", field=f"{section}[{index}].{end}")
            if section == "add" and _key(edge) in removing:
                raise InvalidInput(f"add[{index}]: {edge.type} {edge.from_id}->{edge.to_id} is also in 'remove'; "
                                   "send it in one of them", field=f"add[{index}]")
            if section == "add" and edge.type == "BLOCKS":
                for end, capsule_id in (("from", edge.from_id), ("to", edge.to_id)):
                    if kinds[capsule_id] not in DAG_KINDS:
                        raise InvalidInput(
                            f"add[{index}].{end}: {capsule_id} is a '{kinds[capsule_id]}'; BLOCKS edges join "
                            "task/epic capsules only", field=f"add[{index}].{end}")


def _relate(tx: ManagedTransaction, req: RelateRequest, visible: Visible) -> dict[str, Any]:
    if any(edge.type == "BLOCKS" for edge in req.add):
        blocks_order.lock(tx)  # before any other write: one lock order for every inserting transaction
    ids = sorted({capsule_id for edge in (*req.add, *req.remove) for capsule_id in (edge.from_id, edge.to_id)})
    # A capsule the caller's key may not see is answered as if it did not exist (no existence leak).
    kinds = {r["id"]: r["kind"] for r in run(tx, "capsules/lookup_state", ids=ids)
             if r["exists"] and (visible is None or visible(r["project_id"]))}
    _check(req, kinds)

    removes = list(dict.fromkeys(_key(edge) for edge in req.remove))
    adds = list(dict.fromkeys(_key(edge) for edge in req.add))
    existed: dict[tuple[str, str, str], bool] = {}
    if removes:
        rows = [{"type": t, "from": a, "to": b} for t, a, b in removes]
        for r in run(tx, "capsules/relate_remove", edges=rows):
            existed[(r["type"], r["from"], r["to"])] = r["existed"]
    added_blocks = blocks_order.add_blocks(tx, [(a, b) for t, a, b in adds if t == "BLOCKS"])
    existed.update({("BLOCKS", a, b): was for (a, b), was in added_blocks.items()})
    rows = [{"from": a, "to": b} for t, a, b in adds if t == "SUPERSEDES"]
    if rows:
        for r in run(tx, "capsules/relate_add_supersedes", edges=rows):
            existed[("SUPERSEDES", r["from"], r["to"])] = r["existed"]
    # A BLOCKS edge changes its target's readiness; a SUPERSEDES edge its target's `superseded`.
    changed = [key for key in (*adds, *removes) if key in existed and existed[key] != (key in adds)]
    maintain.refresh(tx, superseded=[b for t, _, b in changed if t == "SUPERSEDES"],
                     readiness=[b for t, _, b in changed if t == "BLOCKS"])
    changes.mark_capsules(tx, [capsule_id for _, a, b in changed for capsule_id in (a, b)])  # watchers (SPEC §13)
    return {
        "added": sum(1 for key in adds if not existed[key]),
        "already_present": [_as_json(key) for key in adds if existed[key]],
        "removed": sum(1 for key in removes if existed[key]),
        "not_present": [_as_json(key) for key in removes if not existed[key]],
    }


def relate(db: Database, req: RelateRequest, now: datetime, wrap: Wrap | None = None,
           visible: Visible = None) -> dict[str, Any]:
    """Apply every add and remove in one transaction; report what changed and what was a no-op.

    `now` is accepted for symmetry with the other writes; edges carry no timestamps.
    """
    return db.write(within(wrap, lambda tx: _relate(tx, req, visible)))
