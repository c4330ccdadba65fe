"""Insert BLOCKS edges while keeping the topological order (`ord`) the pack's cycle proof reads.

Every unmarked BLOCKS edge a -> b has a.ord < b.ord (graphsvc.core.order). An edge that already
goes up in the order costs nothing more than its creation. One that goes against it gets a
Pearce–Kelly insertion inside the same transaction: a bounded forward search from b (nodes with
ord <= a.ord) and, unless it reaches a, a bounded backward search from a (ord >= b.ord), then the
two regions swap places in the pool of their own ords: only the affected region is touched. When
the forward search reaches a, the edge closes a loop: it is created with `closes_loop: true`, and
the order is left as it is. Removing an edge, completing or tombstoning a task never breaks an
order, so only insertion is handled here. A batch with many edges against the order (an import,
a bulk relate) orders the ord intervals they span again from scratch instead, over the same ords.

Concurrency: the searches read a region that another transaction could change, so every
transaction that inserts BLOCKS edges first takes one lock (cypher/order/lock). Inserting
transactions are serialised; everything else (reads, other writes) is not affected.
"""

from __future__ import annotations

import logging
from bisect import bisect_left, bisect_right
from typing import Any, Sequence

from neo4j import ManagedTransaction

from graphsvc.core.order import close_gaps, from_scratch, pool_reorder
from graphsvc.store.db import run

log = logging.getLogger(__name__)

Edge = tuple[str, str]


def lock(tx: ManagedTransaction) -> None:
    """Take the BLOCKS-insertion lock; call it before the transaction's other writes."""
    run(tx, "order/lock")


#: A batch with more edges against the order than this orders the ord intervals they span again
#: from scratch (graphsvc.core.order.from_scratch) instead of one Pearce–Kelly insertion per edge.
BATCH_REORDER_THRESHOLD = 16


def _ords(tx: ManagedTransaction, ids: Sequence[str]) -> dict[str, int]:
    return {r["id"]: r["ord"] for r in run(tx, "order/ords", ids=sorted(set(ids)))}


def _reached(tx: ManagedTransaction, statement: str, start: str, start_ord: int, bound: int) -> dict[str, int]:
    found = {r["id"]: r["ord"] for r in run(tx, statement, start=start, bound=bound)}
    return {start: start_ord, **found}


def _insert_against_order(tx: ManagedTransaction, a: str, b: str) -> bool:
    """Make room for a -> b (a.ord > b.ord); False when the edge closes a loop instead."""
    ords = _ords(tx, [a, b])
    if ords[a] < ords[b]:  # an earlier reorder of this batch already put them in order
        return True
    forward = _reached(tx, "order/forward", b, ords[b], ords[a])
    if a in forward:
        return False
    backward = _reached(tx, "order/backward", a, ords[a], ords[b])
    moved = pool_reorder(backward, forward)
    if moved:
        run(tx, "order/set_ords", rows=[{"id": node, "ord": value} for node, value in moved.items()])
    return True


def _merged(intervals: list[tuple[int, int]]) -> list[tuple[int, int]]:
    merged: list[tuple[int, int]] = []
    for low, high in sorted(intervals):
        if merged and low <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], high))
        else:
            merged.append((low, high))
    return merged


def reorder_intervals(tx: ManagedTransaction, against: Sequence[Edge]) -> None:
    """Mend edges a -> b created against the order by ordering their ord intervals again from scratch.

    For each (merged) interval [ord(b), ord(a)], every task/epic whose ord lies in it is ordered
    from scratch over the interval's own ords, with the edges inside it. That is safe: an edge
    entering the interval comes from an ord below it and one leaving it goes to an ord above it,
    and every reassigned ord stays inside the interval. Only changed ords and marks are written.
    """
    ords = _ords(tx, [end for edge in against for end in edge])
    intervals = _merged([(ords[b], ords[a]) for a, b in against])
    rows = sorted(run(tx, "order/interval", intervals=[list(interval) for interval in intervals]),
                  key=lambda r: r["ord"])
    row_ords = [r["ord"] for r in rows]
    moved: list[dict[str, Any]] = []
    remarked: list[dict[str, Any]] = []
    for low, high in intervals:
        # each interval's rows by bisection: a scan of all rows per interval was quadratic
        # (2 of 5 s of a 4,000-edge relate under the profiler)
        region = rows[bisect_left(row_ords, low):bisect_right(row_ords, high)]
        current = {r["seq"]: r["ord"] for r in region}
        id_of = {r["seq"]: r["id"] for r in region}
        marked_now = {(r["seq"], target): marked for r in region
                      for target, target_ord, marked in r["out"] if low <= target_ord <= high}
        ord_of, marked = from_scratch(current, marked_now, pool=current.values(), priority=current)
        moved += [{"id": id_of[seq], "ord": value} for seq, value in ord_of.items() if current[seq] != value]
        remarked += [{"from": a, "to": b, "marked": (a, b) in marked}
                     for (a, b), was in marked_now.items() if was != ((a, b) in marked)]
    if moved:
        run(tx, "order/set_ords", rows=moved)
    if remarked:
        run(tx, "order/set_marks", edges=remarked)


def add_blocks(tx: ManagedTransaction, edges: Sequence[Edge]) -> dict[Edge, bool]:
    """Create the BLOCKS edges (deduplicated) keeping the order; returns {edge: existed before}.

    The caller has taken `lock(tx)` and checked that both ends are task/epic capsules.
    """
    unique = list(dict.fromkeys(edges))
    if not unique:
        return {}
    ords = _ords(tx, [end for edge in unique for end in edge])
    in_order = [e for e in unique if ords[e[0]] < ords[e[1]]]
    against = [e for e in unique if ords[e[0]] >= ords[e[1]]]
    existed: dict[Edge, bool] = {}

    def create(batch: list[Edge], closes_loop: bool) -> None:
        rows = [{"from": a, "to": b, "closes_loop": closes_loop} for a, b in batch]
        for r in run(tx, "order/create_blocks", edges=rows):
            existed[(r["from"], r["to"])] = r["existed"]

    if in_order:  # first: a reorder below must see them, and keeps them in order
        create(in_order, False)
    if len(against) > BATCH_REORDER_THRESHOLD:
        create(against, False)  # marks are set by the reorder
        reorder_intervals(tx, against)
        return existed
    for a, b in against:
        create([(a, b)], not _insert_against_order(tx, a, b))
    return existed


def leaving(tx: ManagedTransaction, ids: Sequence[str]) -> list[tuple[int, int]]:
    """(seq, ord) of the task/epic capsules among `ids`, read before they are deleted."""
    return [(r["seq"], r["ord"]) for r in run(tx, "order/seq_ord", ids=list(ids))]


def close_order_gaps(tx: ManagedTransaction, left: Sequence[tuple[int, int]]) -> None:
    """After the capsules `left` ((seq, ord) each) were deleted: make the ords a permutation of the
    remaining task/epic seqs again, keeping the survivors' relative order. Only ords at or above the
    smallest seq or ord that left can differ, so only those are read and renumbered."""
    if not left:
        return
    low = min(min(seq, ord_) for seq, ord_ in left)
    rows = run(tx, "order/held_from", low=low)
    held = [(r["id"], r["ord"]) for r in rows if r["id"] is not None]
    seqs = [r["seq"] for r in rows if r["seq"] is not None]
    if len(held) != len(seqs):  # the order had drifted before this removal: leave it to `verify --repair`
        log.warning("the BLOCKS order was not a permutation before a removal (%d ords, %d seqs at or above %d); "
                    "run `graphsvc verify --repair`", len(held), len(seqs), low)
        return
    changed = close_gaps(held, seqs)
    if changed:
        run(tx, "order/set_ords", rows=[{"id": capsule_id, "ord": ord_} for capsule_id, ord_ in sorted(changed.items())])
