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
the claiming transaction: the head and the ready rows, `read_ready`): its own held work first, so
claiming again renews (the heartbeat), then the ready work nobody holds. A candidate that another
claimer took since the read is skipped; when every candidate of a read was taken, the pack is read
again (the takers have committed, so the next read no longer offers them), until a claim succeeds
or the pack offers nothing: then the answer is `all_held` (others hold ready work) or
`nothing_ready`, or `cycle` when the fence holds a live cycle (SPEC §3 fails closed whatever is
held). The pack's head alone decides those three (`nothing_to_claim`). The pack is read in a read
transaction and each candidate taken in a small write transaction of its own, which a refusal
rolls back at once (`_claim_next_apart` says why); a claim with an idempotency key does all of it
in the one write transaction that stores its answer (`claim_next`).

With `task_id`, a live cycle in the fence fails closed too: the answer is the same `cycle` refusal
(200, `claimed: null`), whichever node is named; otherwise the node is taken or refused with a 409.

`lease_changed` is the one place where a claim or release commits a change of a lease.
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from typing import Any, Callable, Mapping

from neo4j import ManagedTransaction

from graphsvc.access import covers
from graphsvc.core.pack import ready_order
from graphsvc.core.timefmt import iso_utc
from graphsvc.errors import Conflict, NotFound, Unavailable
from graphsvc.models import BootstrapRequest, ClaimRequest, ReleaseRequest
from graphsvc.store import changes
from graphsvc.store.bootstrap import inputs_from_row, live_cycle, pack_statements, read_ready, statement_parameters
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


#: Runs of claims/take for one node whose state changed between its look without the lock and its
#: read after (`changed`): each means another writer committed on that node within microseconds,
#: so a few runs settle it; the bound keeps a take from spinning should the store misbehave.
MAX_TAKE_RUNS = 8


def _take(tx: ManagedTransaction, task_id: str, agent: str, now: datetime, until: datetime,
          key: str | None) -> dict[str, Any]:
    """The take of `task_id` (cypher/claims/take.cypher), run again while it answers `changed` (it
    only writes a lease under the node's lock, and that run decided without it)."""
    for _ in range(MAX_TAKE_RUNS):
        row = dict(run(tx, "claims/take", id=task_id, agent=agent, now=now, until=until, key=key)[0])
        if row["refused"] != "changed":
            break
    else:
        raise Unavailable(f"{task_id} changed under every attempt to claim it; retry shortly")
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


def _pack_of(request: ClaimRequest) -> BootstrapRequest:
    """The pack whose ready order a claim follows: the caller's own (same fence, terms and agent)."""
    return BootstrapRequest(project_id=request.project_id, project_prefix=request.project_prefix,
                            terms=request.terms, token_budget=0, agent=request.agent)


def nothing_to_claim(head: Mapping[str, Any]) -> dict[str, Any] | None:
    """The answer of a claim without task_id that the pack's head row alone decides, or None.

    The head (cypher/bootstrap/head.cypher) holds all a refusal needs: the fence's live cycle, found
    as the pack finds it (its edges travel only when the fence holds a live `closes_loop` edge), and
    `ready_total`, the exact count of the ready nodes the caller's pack can show (its own held
    nodes included, others' left out). A pack's ready order is empty exactly when that count is 0,
    so when it is, the claim answers `all_held` (others hold ready work) or `nothing_ready` without
    reading a ready row."""
    cycle = live_cycle(head["loop_edges"], head["live_blocked_by"])
    if cycle is not None:
        return {"claimed": None, "cycle": cycle, "reason": "cycle"}
    if head["ready_total"] == 0:
        return {"claimed": None, "reason": "all_held" if head["held_by_others"] else "nothing_ready"}
    return None


def _head(tx: ManagedTransaction, request: ClaimRequest, now: datetime,
          scope: tuple[str, ...] | None) -> tuple[BootstrapRequest, dict[str, Any], dict[str, Any]]:
    pack = _pack_of(request)
    params = statement_parameters(pack, now, scope)
    head_statement, _ = pack_statements(pack.project_id, pack.project_prefix, scope)
    return pack, params, dict(run(tx, head_statement, **params)[0])


def candidates(db: Database, request: ClaimRequest, now: datetime,
               scope: tuple[str, ...] | None = None) -> dict[str, Any] | list[str]:
    """`_candidates` in a read transaction: the answer a claim without task_id gives when its fence
    has no ready node that others do not hold, or the ids it may claim, in its pack's ready order."""
    return db.read(lambda tx: _candidates(tx, request, now, scope))


def _claim_task(tx: ManagedTransaction, request: ClaimRequest, now: datetime, key: str | None,
                visible: Visible, scope: tuple[str, ...] | None) -> dict[str, Any]:
    assert request.task_id is not None
    found = _lookup(tx, request.task_id, visible, lambda project_id: _in_fence(request, project_id, visible))
    # A live cycle in the fence fails closed whatever is named (SPEC §3, §12): a pack of this fence
    # shows no ready work, so no node of it is claimed, and the answer names the cycle to repair.
    head = _head(tx, request, now, scope)[2]
    cycle = live_cycle(head["loop_edges"], head["live_blocked_by"])
    if cycle is not None:
        return {"claimed": None, "cycle": cycle, "reason": "cycle"}
    row = _take(tx, request.task_id, request.agent, now, now + timedelta(seconds=request.lease_s), key)
    if row["refused"] is not None:
        raise _refusal(row, found["kind"])
    return _claimed(row)


def _candidates(tx: ManagedTransaction, request: ClaimRequest, now: datetime,
                scope: tuple[str, ...] | None) -> dict[str, Any] | list[str]:
    """The caller's pack read (its head and ready rows only): the refusal its head decides, or the
    ids of its ready order, the claimable candidates in turn."""
    pack, params, head = _head(tx, request, now, scope)
    refused = nothing_to_claim(head)
    if refused is not None:
        return refused
    sections = read_ready(tx, pack, params, head)
    inputs = inputs_from_row(sections, sections["loop_edges"], params["whole_weight"])
    return list(ready_order(inputs, tuple(request.terms or ()), now))


def _in_turn(read: Callable[[], dict[str, Any] | list[str]],
             take: Callable[[str], dict[str, Any] | None]) -> dict[str, Any]:
    """Read the candidates (or the refusal), then `take` each in turn until one answers; read again
    when every candidate was taken (or stopped being ready) since the read: those writers have
    committed, so the next read offers what is left."""
    for _ in range(MAX_ROUNDS):
        found = read()
        if isinstance(found, dict):
            return found
        for task_id in found:
            answer = take(task_id)
            if answer is not None:
                return answer
    raise Unavailable("the ready work in this scope changed too often to claim a task; retry shortly")


def claim_next(tx: ManagedTransaction, request: ClaimRequest, now: datetime, key: str | None,
               scope: tuple[str, ...] | None) -> dict[str, Any]:
    """A claim without task_id in the write transaction `tx` (the one an idempotency key's answer is
    stored in): the caller's pack read, then its ready order taken in turn."""
    until = now + timedelta(seconds=request.lease_s)

    def take(task_id: str) -> dict[str, Any] | None:
        row = _take(tx, task_id, request.agent, now, until, key)
        return _claimed(row) if row["refused"] is None else None

    return _in_turn(lambda: _candidates(tx, request, now, scope), take)


class _Refused(Exception):
    """A take refused under the node's lock: raised so its transaction rolls back, which frees the
    lock at once."""


def _claim_next_apart(db: Database, request: ClaimRequest, now: datetime, key: str | None,
                      scope: tuple[str, ...] | None) -> dict[str, Any]:
    """A claim without task_id and without an idempotency key: the pack read in a read transaction,
    then each candidate in a write transaction of its own, until one is taken.

    Why apart: a take locks its node until its transaction ends, refused or not. Many agents that
    claim at once reach for the same first node; were the whole claim one transaction, each claimer
    refused there would keep that lock while it went on to take the next node and commit, and the
    claimers behind it would wait for whole claims, one after the other. A refused take here rolls back at once and the next
    claimer in line gets the lock. The read transaction gives the same view as a read inside the
    write transaction would (Neo4j reads what is committed), and the take re-checks readiness and
    the lease under the lock (cypher/claims/take.cypher), so what is taken is still ready and free."""
    until = now + timedelta(seconds=request.lease_s)

    def take_or_roll_back(tx: ManagedTransaction, task_id: str) -> dict[str, Any]:
        row = _take(tx, task_id, request.agent, now, until, key)
        if row["refused"] is not None:
            raise _Refused(task_id)
        return _claimed(row)

    def take(task_id: str) -> dict[str, Any] | None:
        try:
            return db.write(lambda tx: take_or_roll_back(tx, task_id))
        except _Refused:
            return None

    return _in_turn(lambda: candidates(db, request, now, scope), take)


def claim(db: Database, request: ClaimRequest, now: datetime, *, key: str | None = None,
          scope: tuple[str, ...] | None = None, visible: Visible = None, wrap: Wrap | None = None) -> dict[str, Any]:
    """SPEC §12 memory_claim in one write transaction. `key`: the API key id that claims (recorded on
    the lease); `scope`: a scoped key's prefixes when the request has no fence (as for packs);
    `visible`: whether the key may see a project (a task outside it is answered as unknown).

    A claim without task_id reads its candidates in a read transaction (`candidates`): under many
    agents most claims find every ready node held, and that answer needs neither the ready rows nor
    a write transaction. It is the answer the write transaction would give at the instant of the
    read (tests/integration/test_claims_refusal.py compares the two with a recomputed pack). A claim
    with an idempotency key (`wrap`) reads and takes in its one write transaction instead
    (`claim_next`): its answer, refusals included, must be stored with the key there."""
    if request.task_id is not None:
        return db.write(within(wrap, lambda tx: _claim_task(tx, request, now, key, visible, scope)))
    if wrap is None:
        return _claim_next_apart(db, request, now, key, scope)
    return db.write(within(wrap, lambda tx: claim_next(tx, request, now, key, scope)))


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
