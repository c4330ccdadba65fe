"""Ingest: one capsule or a batch, all-or-nothing in one write transaction.

Ids are reserved from the one counter in a transaction of their own, committed before the
ingest's transaction starts. The counter is a single node every ingest writes, so whatever
transaction reserves ids holds its lock until it commits: reserving inside the ingest would queue
every other ingest behind this one's statements, round trips and commit (under a mixed load that
wait was ~1.5 s per ingest, nearly all of the ingest's time). Reserved apart, the lock lasts one
short statement. The reserving transaction checks the referenced ids first, so a batch rejected
for a reference burns no id; an ingest that fails later (a timeout, Neo4j gone) leaves a gap, and
two concurrent ingests may commit in the opposite order of their ids. An ingest with an idempotency
key reserves inside its transaction, after the key's lock, so its retries and racing twins burn no
id (they queue on the counter as before: the price of that promise). Inside the ingest's
transaction the references are checked again (an operator may delete capsules meanwhile), then
nodes and edges are created with UNWIND (one statement per kind of write, never one per row).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Sequence

from neo4j import ManagedTransaction

from graphsvc.store import blocks_order, changes, maintain
from graphsvc.store.db import Database, run
from graphsvc.store.idempotency import Wrap, within
from graphsvc.store.records import Visible
from graphsvc.errors import InvalidInput
from graphsvc.models import DAG_KINDS, CapsuleIn


def _field(index: int | None, name: str, position: int) -> str:
    prefix = f"items[{index}]." if index is not None else ""
    return f"{prefix}{name}[{position}]"


def _check_references(tx: ManagedTransaction, items: Sequence[CapsuleIn], batch: bool, visible: Visible) -> None:
    wanted = sorted({ref for item in items for ref in (*item.supersedes, *item.blocks, *item.blocked_by)})
    if not wanted:
        return
    # A capsule the caller's key may not see is answered as if it did not exist (no existence leak).
    kinds = {r["id"]: r["kind"] for r in run(tx, "capsules/lookup_refs", ids=wanted)
             if r["exists"] and (visible is None or visible(r["project_id"]))}
    for index, item in enumerate(items):
        where = index if batch else None
        for name in ("supersedes", "blocks", "blocked_by"):
            for position, ref in enumerate(getattr(item, name)):
                if ref not in kinds:
                    raise InvalidInput(
                        f"{ref} does not exist; edges can only point at stored capsules",
                        field=_field(where, name, position),
                    )
                if name != "supersedes" and kinds[ref] not in DAG_KINDS:
                    raise InvalidInput(
                        f"{ref} is a '{kinds[ref]}'; BLOCKS edges join task/epic capsules only",
                        field=_field(where, name, position),
                    )


def _row(item: CapsuleIn, capsule_id: str, seq: int, provenance: dict[str, str]) -> dict[str, Any]:
    """One node's label and properties; created_at/updated_at are the request's `now`, sent once per batch.

    Maintained fields start as a capsule nothing supersedes: its folded tokens, `superseded`
    false, `counted` (but a task/epic's, which waits for its readiness), `census` and, for a task/epic,
    `ord` = seq (above every ord in use, graphsvc.core.order).
    """
    props: dict[str, Any] = {
        "id": capsule_id,
        "seq": seq,
        "project_id": item.project_id,
        "kind": item.kind,
        "tier": item.tier,
        "headline": item.headline,
        "content": item.content,
    }
    if item.status is not None:
        props["status"] = item.status
    if item.valid_to is not None:
        props["valid_to"] = item.valid_to
    props.update(provenance)  # written_by, written_by_label: the key that wrote it (graphsvc.access)
    props["tokens"] = maintain.folded_tokens(item.headline, item.content)
    props["superseded"] = False
    if item.kind in DAG_KINDS:
        props["ord"] = seq
    section = maintain.created_section(item.kind, item.tier)
    if section is not None:
        props["counted"] = section
    props["census"] = maintain.census_of(item.kind, tombstoned=False, superseded=False)
    return {"label": maintain.kind_label(item.kind), "props": props}


def reserve_ids(tx: ManagedTransaction, count: int) -> int:
    """Reserve `count` consecutive capsule numbers; return the first."""
    return run(tx, "capsules/allocate_ids", count=count)[0]["first"]


def _ingest(tx: ManagedTransaction, items: Sequence[CapsuleIn], now: datetime, batch: bool,
            visible: Visible, provenance: dict[str, str], first: int | None = None) -> list[str]:
    """The ingest's writes in `tx`; numbers from `first` on (reserved in `tx` itself when None)."""
    if any(item.blocks or item.blocked_by for item in items):
        blocks_order.lock(tx)  # before any other write: one lock order for every inserting transaction
    _check_references(tx, items, batch, visible)
    if first is None:
        first = reserve_ids(tx, len(items))
    ids = [f"cap-{first + offset}" for offset in range(len(items))]
    rows = [_row(item, capsule_id, first + offset, provenance) for offset, (item, capsule_id) in enumerate(zip(items, ids))]
    run(tx, "capsules/create", rows=rows, now=now)
    maintain.count_created(tx, [row["props"] for row in rows])
    blocks: list[tuple[str, str]] = []
    supersedes: list[dict[str, str]] = []
    for item, capsule_id in zip(items, ids):
        blocks += [(capsule_id, ref) for ref in item.blocks]
        blocks += [(ref, capsule_id) for ref in item.blocked_by]
        supersedes += [{"from": capsule_id, "to": ref} for ref in item.supersedes]
    if blocks:
        blocks_order.add_blocks(tx, blocks)
    if supersedes:
        run(tx, "capsules/create_supersedes", edges=supersedes)
    # What the batch can change: its own tasks' readiness (and so `counted`), what its `blocks`
    # edges point at, and whatever its `supersedes` retire (and what those blocked). The other new
    # capsules were created counted: nothing in the batch can supersede them (references are to
    # stored capsules only).
    new_tasks = [capsule_id for item, capsule_id in zip(items, ids) if item.kind in DAG_KINDS]
    maintain.refresh(tx, superseded=[edge["to"] for edge in supersedes],
                     readiness=new_tasks + [target for _, target in blocks])
    # Watchers (SPEC §13): the new capsules' projects, and those of every stored capsule an edge reached.
    changes.mark_capsules(tx, {ref for item in items for ref in (*item.supersedes, *item.blocks, *item.blocked_by)},
                          [item.project_id for item in items])
    return ids


def ingest(db: Database, items: Sequence[CapsuleIn], now: datetime, *, batch: bool = True,
           wrap: Wrap | None = None, visible: Visible = None,
           provenance: dict[str, str] | None = None) -> list[str]:
    """Store validated capsules and their edges; return the new ids in item order.

    `batch` only changes how error fields are named (`items[3].blocks[0]` vs `blocks[0]`);
    `wrap` composes the unit of work (an idempotency key is stored in the same transaction).
    """
    def reserve(tx: ManagedTransaction) -> int:
        _check_references(tx, items, batch, visible)
        return reserve_ids(tx, len(items))

    # A keyed ingest reserves inside its own transaction, after its key's lock: a retry that is
    # replayed, or a racing twin that loses, must not burn ids (SPEC §5: a retry writes nothing).
    first = db.write(reserve) if wrap is None else None
    return db.write(within(wrap, lambda tx: _ingest(tx, items, now, batch, visible, provenance or {}, first)))
