"""SPEC §12 claims: leases on ready work, taken and ended in Neo4j.

A lease is data on the task or epic itself: `lease_agent`, `lease_until` (and `lease_key`, the API
key that took it, when one did). It is live while `lease_until > now` (the request clock); an
expired lease is as if absent. Done, tombstoned and superseded nodes lose theirs
(cypher/maintain/refresh_readiness.cypher).

Race-free without any process memory: a claim writes the lease in its own write transaction, under
the write lock Neo4j takes on the node (cypher/claims/take.cypher re-checks readiness and the lease
after taking it), so of N concurrent claimers of one node, across workers and service instances,
one wins and the others see its lease and move on. A deadlock between claimers is a transient
error that the managed transaction retries within the request's bound.

Without `task_id`, the claim takes the first node of the ready order the caller's own pack shows
(graphsvc.store.bootstrap's statements with the same fence, terms, clock and `agent`, read inside
the claiming transaction): its own held work first, so claiming again renews (the heartbeat), then
the ready work nobody holds. A candidate that another claimer took since the read is skipped; when
every candidate of a read was taken, the pack is read again (the takers have committed, so the next
read no longer offers them), until a claim succeeds or the pack offers nothing: then the answer is
`all_held` (others hold ready work) or `nothing_ready`, or `cycle` when the fence holds a live
cycle (SPEC §3 fails closed whatever is held).

`lease_changed` is the one place where a claim or release commits a change of a lease.
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from typing import Any, Callable

from neo4j import ManagedTransaction

from graphsvc.access import covers
from graphsvc.core.pack import ready_order
from graphsvc.core.timefmt import iso_utc
from graphsvc.errors import Conflict, NotFound, Unavailable
from graphsvc.models import BootstrapRequest, ClaimRequest, ReleaseRequest
from graphsvc.store import changes
from graphsvc.store.bootstrap import inputs_from_row, read_sections, statement_parameters
from graphsvc.store.db import Database, run
from graphsvc.store.idempotency import Wrap, within

_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)

#: Reads of the pack one claim may make when every candidate of the previous read was taken
#: meanwhile. Each such round means other claimers committed that many leases, so the bound is
#: never reached in practice; it keeps a claim from spinning should the store misbehave.
MAX_ROUNDS = 64

Visible = Callable[[str], bool]


def _instant(us: int | None) -> str | None:
    return None if us is None else iso_utc(_EPOCH + timedelta(microseconds=us))


def lease_changed(tx: ManagedTransaction, project_id: str) -> None:
    """Called in the transaction of every claim, renewal and release that changes a lease on a node
    of `project_id`, before it commits: a lease changes packs, so the project is marked changed for
    the watchers of its packs (SPEC §13, graphsvc.store.changes) in the same transaction."""
    changes.mark(tx, [project_id])


def _in_fence(request: ClaimRequest, project_id: str, visible: Visible) -> bool:
    if request.project_id is not None and project_id != request.project_id:
        return False
    if request.project_prefix is not None and not covers(request.project_prefix, project_id):
        return False
    return visible is None or visible(project_id)


def _lookup(tx: ManagedTransaction, task_id: str, visible: Visible,
            in_fence: Callable[[str], bool] = lambda project_id: True) -> dict[str, Any]:
    """The node, or a 404 naming it: unknown, outside the fence or the key's scope (answered alike,
    no existence leak), or tombstoned (excluded from every read but memory_get)."""
    rows = run(tx, "claims/lookup", id=task_id)
    if not rows or not in_fence(rows[0]["project_id"]) or (visible is not None and not visible(rows[0]["project_id"])):
        raise NotFound(f"no task or epic with id {task_id} in this scope", field="task_id")
    if rows[0]["tombstoned"]:
        raise NotFound(f"{task_id} is tombstoned: it can no longer be claimed", field="task_id")
    return dict(rows[0])


def _take(tx: ManagedTransaction, task_id: str, agent: str, now: datetime, until: datetime,
          key: str | None) -> dict[str, Any]:
    row = dict(run(tx, "claims/take", id=task_id, agent=agent, now=now, until=until, key=key)[0])
    if row["refused"] is None:
        lease_changed(tx, row["project_id"])
    return row


def _claimed(row: dict[str, Any]) -> dict[str, Any]:
    return {"claimed": {"headline": row["headline"], "id": row["id"], "lease_until": _instant(row["lease_until_us"]),
                        "project_id": row["project_id"]},
            "renewed": bool(row["renewed"])}


def _refusal(row: dict[str, Any], kind: str) -> Conflict:
    task_id, reason = row["id"], row["refused"]
    detail: dict[str, Any] = {"reason": reason}
    if reason == "held":
        detail.update(holder=row["holder"], lease_until=_instant(row["lease_until_us"]))
        message = (f"{task_id} is held by agent '{row['holder']}' until {detail['lease_until']}; claim another "
                   "task (omit task_id to get the next free one) or wait for the lease to end")
    elif reason == "done":
        message = f"{task_id} is done: there is nothing left to claim"
    elif kind not in ("task", "epic"):
        message = f"{task_id} is a {kind}, not a task or epic: only ready tasks and epics can be claimed"
    else:
        message = (f"{task_id} is not ready (open blockers, superseded or expired); claim it once it shows in "
                   "the ready set, or omit task_id to get the next ready task")
    return Conflict(message, field="task_id", details=[detail])


def _claim_task(tx: ManagedTransaction, request: ClaimRequest, now: datetime, key: str | None,
                visible: Visible) -> dict[str, Any]:
    assert request.task_id is not None
    found = _lookup(tx, request.task_id, visible, lambda project_id: _in_fence(request, project_id, visible))
    row = _take(tx, request.task_id, request.agent, now, now + timedelta(seconds=request.lease_s), key)
    if row["refused"] is not None:
        raise _refusal(row, found["kind"])
    return _claimed(row)


def _claim_next(tx: ManagedTransaction, request: ClaimRequest, now: datetime, key: str | None,
                scope: tuple[str, ...] | None) -> dict[str, Any]:
    pack = BootstrapRequest(project_id=request.project_id, project_prefix=request.project_prefix,
                            terms=request.terms, token_budget=0, agent=request.agent)
    params = statement_parameters(pack, now, scope)
    until = now + timedelta(seconds=request.lease_s)
    for _ in range(MAX_ROUNDS):
        sections = read_sections(tx, pack, params)
        inputs = inputs_from_row(sections, sections["loop_edges"], params["whole_weight"])
        if inputs.cycle is not None:
            return {"claimed": None, "cycle": list(inputs.cycle), "reason": "cycle"}
        order = ready_order(inputs, tuple(request.terms or ()), now)
        if not order:
            return {"claimed": None, "reason": "all_held" if inputs.held_by_others else "nothing_ready"}
        for task_id in order:
            row = _take(tx, task_id, request.agent, now, until, key)
            if row["refused"] is None:
                return _claimed(row)
        # Every candidate was taken (or stopped being ready) since the read; those writers have
        # committed, so the next read offers what is left.
    raise Unavailable("the ready work in this scope changed too often to claim a task; retry shortly")


def claim(db: Database, request: ClaimRequest, now: datetime, *, key: str | None = None,
          scope: tuple[str, ...] | None = None, visible: Visible = None, wrap: Wrap | None = None) -> dict[str, Any]:
    """SPEC §12 memory_claim in one write transaction. `key`: the API key id that claims (recorded on
    the lease); `scope`: a scoped key's prefixes when the request has no fence (as for packs);
    `visible`: whether the key may see a project (a task outside it is answered as unknown)."""
    if request.task_id is not None:
        return db.write(within(wrap, lambda tx: _claim_task(tx, request, now, key, visible)))
    return db.write(within(wrap, lambda tx: _claim_next(tx, request, now, key, scope)))


def _release(tx: ManagedTransaction, request: ReleaseRequest, now: datetime, visible: Visible) -> dict[str, Any]:
    found = _lookup(tx, request.task_id, visible)
    row = run(tx, "claims/release", id=request.task_id, agent=request.agent, now=now)[0]
    if row["holder"] is not None:
        lease_until = _instant(row["lease_until_us"])
        raise Conflict(f"{request.task_id} is held by agent '{row['holder']}' until {lease_until}, not by "
                       f"'{request.agent}': only the holder releases it", field="agent",
                       details=[{"reason": "held", "holder": row["holder"], "lease_until": lease_until}])
    if row["released"]:
        lease_changed(tx, found["project_id"])
    return {"released": bool(row["released"]), "task_id": request.task_id}


def release(db: Database, request: ReleaseRequest, now: datetime, *, visible: Visible = None,
            wrap: Wrap | None = None) -> dict[str, Any]:
    """SPEC §12 memory_release: end the agent's lease (idempotent: `released` false when it held none)."""
    return db.write(within(wrap, lambda tx: _release(tx, request, now, visible)))
