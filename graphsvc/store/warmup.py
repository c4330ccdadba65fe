"""Compile the write side's query plans once per process, before an agent's write pays for them.

A write that inserts a BLOCKS edge against the order runs about ten statements in one transaction;
on a cold or busy Neo4j, planning each takes up to seconds, and together they can outlive the
transaction timeout (GRAPHSVC_QUERY_TIMEOUT) on the very first such write. So every statement a
write may run is executed here once, inside write transactions that are then rolled back:
nothing is stored, and the plans stay in Neo4j's cache.

Each statement has one plan whatever its arguments (graphsvc.store.db.statement_arguments), but
Neo4j also keys a plan on whether its transaction already changed something: a write's first
statements run in a clean transaction, its later ones after its own changes. So each statement is
run in the states it meets (`planned_in`): clean, in a transaction of its own; after a change, in
one that first creates an unlabelled node (no new label or property token, which would outlive the
roll-back).
"""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any, Callable

from neo4j import ManagedTransaction

from graphsvc.store.db import Database, run

_NOWHERE = "cap-0"  # no capsule has seq 0
_NOW = datetime(2000, 1, 1, tzinfo=timezone.utc)

#: Each write statement with parameters of the types the writes send; none matches a stored capsule.
STATEMENTS: tuple[tuple[str, dict[str, Any]], ...] = (
    ("capsules/create", {"rows": [], "now": _NOW}),
    ("capsules/lookup_for_update", {"id": _NOWHERE}),
    ("capsules/update", {"id": _NOWHERE, "changes": {}}),
    ("maintain/write_tokens", {"rows": []}),
    ("idempotency/lookup", {"caller": "", "key": "graphsvc-warm-up", "now": _NOW}),
    ("idempotency/purge_expired", {"limit": 0, "now": _NOW}),
    ("capsules/lookup_refs", {"ids": [_NOWHERE]}),
    ("capsules/lookup_state", {"ids": [_NOWHERE]}),
    ("capsules/create_supersedes", {"edges": [{"from": _NOWHERE, "to": _NOWHERE}]}),
    ("capsules/relate_add_supersedes", {"edges": [{"from": _NOWHERE, "to": _NOWHERE}]}),
    ("capsules/relate_remove", {"edges": [{"type": "BLOCKS", "from": _NOWHERE, "to": _NOWHERE}]}),
    ("capsules/tombstone", {"ids": [_NOWHERE], "now": _NOW}),
    ("order/ords", {"ids": [_NOWHERE]}),
    ("order/forward", {"start": _NOWHERE, "bound": 0}),
    ("order/backward", {"start": _NOWHERE, "bound": 0}),
    ("order/set_ords", {"rows": [{"id": _NOWHERE, "ord": 0}]}),
    ("order/set_marks", {"edges": [{"from": 0, "to": 0, "marked": False}]}),
    ("order/interval", {"intervals": [[0, 0]]}),
    ("order/create_blocks", {"edges": [{"from": _NOWHERE, "to": _NOWHERE, "closes_loop": False}]}),
    ("maintain/refresh_superseded", {"ids": [_NOWHERE]}),
    ("maintain/refresh_readiness", {"ids": [_NOWHERE]}),
    ("maintain/refresh_counted", {"ids": [_NOWHERE]}),
    ("maintain/add_to_tallies", {"rows": [{"key": "decisions|" + _NOWHERE, "project_id": _NOWHERE,
                                           "section": "decisions", "delta": 0}]}),
    ("maintain/blocked_targets", {"ids": [_NOWHERE]}),
    ("maintain/superseded_targets", {"ids": [_NOWHERE]}),
    ("aliases/store", {"key": "graphsvc-warm-up", "scope": "", "aliases": ["warm"]}),
    ("sessions/lock", {"id": "ses-0"}),
    ("sessions/previous_handoffs", {"agent": "graphsvc-warm-up", "project_id": _NOWHERE}),
    ("sessions/finish", {"id": "ses-0", "handoff_id": _NOWHERE, "now": _NOW, "finish_hash": ""}),
    ("keys/create", {"id": "000000000000", "label": "warm-up", "rights": "read", "prefixes": None, "salt": "",
                     "secret_hash": "", "now": _NOW}),
    ("keys/revoke", {"id": "000000000000", "now": _NOW}),
    ("keys/touch", {"id": "000000000000", "now": _NOW, "before": _NOW}),
    ("claims/lookup", {"id": _NOWHERE}),
    ("claims/take", {"id": _NOWHERE, "agent": "graphsvc-warm-up", "now": _NOW, "until": _NOW, "key": None}),
    ("claims/release", {"id": _NOWHERE, "agent": "graphsvc-warm-up", "now": _NOW}),
    ("changes/affected", {"ids": [_NOWHERE]}),
    # The watchers' reads (graphsvc.store.changes), planned here beside the writes that mark.
    ("changes/since", {"since_ms": 0, "lookback_ms": 0}),
    ("changes/next_instant_store", {"now": _NOW}),
    ("changes/next_instant_fenced", {"scopes": [_NOWHERE], "now": _NOW}),
    # Last: these take locks every writer needs (the id counter, the BLOCKS order, a key's node),
    # held until the roll-back, so that is milliseconds after them, not the whole warm-up.
    ("idempotency/claim", {"caller": "", "key": "graphsvc-warm-up", "now": _NOW}),
    ("idempotency/record", {"caller": "", "key": "graphsvc-warm-up", "now": _NOW, "expires_at": _NOW,
                            "operation": "warm-up", "request_hash": "", "response": "", "status": 200}),
    ("capsules/allocate_ids", {"count": 0}),
    ("aliases/lock", {"key": "graphsvc-warm-up", "scope": "", "term": "warm"}),
    ("sessions/start", {"agent": "graphsvc-warm-up", "project_id": _NOWHERE, "now": _NOW}),
    ("sessions/lock_handoffs", {"key": "graphsvc-warm-up"}),
    ("order/lock", {}),
    ("changes/mark", {"project_ids": ["graphsvc-warm-up"]}),
)


#: The statements a write runs in one transaction state only: "clean" (always first in its
#: transaction, or after statements that changed nothing) or "changed" (always after a change).
#: Every other statement of STATEMENTS is planned in both. About a third of the plans are then
#: not made, which is time a start-up and a re-warm after a Neo4j restart (a cold JVM: seconds per
#: plan) do not spend; the test suite records the state every write statement runs in and fails on one that is
#: not planned (tests/conftest.py, `unplanned`).
ONLY: dict[str, str] = {
    **dict.fromkeys(("maintain/write_tokens", "idempotency/lookup", "idempotency/purge_expired", "idempotency/claim",
                     "keys/create", "keys/revoke", "keys/touch",
                     "changes/since", "changes/next_instant_store", "changes/next_instant_fenced",
                     "changes/mark"), "clean"),
    # After the order's lock, a capsule's lock, the rows a write created, or the statement that locks a set.
    **dict.fromkeys(("capsules/update", "capsules/create_supersedes", "order/ords", "order/forward", "order/backward",
                     "order/set_ords", "order/set_marks", "order/interval", "order/create_blocks",
                     "maintain/refresh_counted", "maintain/add_to_tallies",
                     "maintain/blocked_targets", "maintain/superseded_targets", "aliases/store",
                     "sessions/previous_handoffs", "sessions/finish",
                     "idempotency/record"), "changed"),
}


#: The statements only sessions, aliases, claims (and imports) write with. A re-warm after a Neo4j
#: restart makes them after the rest (`part`): ingest, update, tombstone and relate, most of what
#: agents write, then pass a few seconds sooner on a cold JVM (GraphService.WARM_CHAINS). The API
#: keys' and watchers' statements stay with the rest: requests run them outside any write's gate.
LATER: frozenset[str] = frozenset(name for name, _ in STATEMENTS
                                  if name.split("/")[0] in ("sessions", "aliases", "claims"))


def planned_in(name: str) -> tuple[bool, ...]:
    """The transaction states (changed or not) `name` is planned in."""
    only = ONLY.get(name)
    return (False, True) if only is None else ((True,) if only == "changed" else (False,))


def unplanned(ran: set[tuple[str, bool]]) -> set[tuple[str, bool]]:
    """Which of `ran` (statement, its transaction had changed something) the warm-up does not plan.
    Only write statements count: the pack's reads are planned clean by GraphService.warm and after
    a change here (`_pack_reads`), the other reads are not warmed at all."""
    writes = {name for name, _ in STATEMENTS}
    return {(name, changed) for name, changed in ran if name in writes and changed not in planned_in(name)}


class _RollBack(Exception):
    """Raised at the end of the warm-up transaction so that it commits nothing."""


def _pack_reads() -> list[tuple[str, dict[str, Any]]]:
    """The pack statements as memory_claim runs them inside its write transaction (SPEC §12), a
    fenced and a whole-store one: after a claim's first write (a taken candidate, an idempotency
    key) they are planned for a changed transaction, a plan `GraphService.warm` does not make."""
    from graphsvc.models import BootstrapRequest
    from graphsvc.store.bootstrap import section_runs, statement_parameters, unread_head

    reads: list[tuple[str, dict[str, Any]]] = []
    for fence, sections in (({"project_id": _NOWHERE}, "bootstrap/sections_fenced"), ({}, "bootstrap/sections_store")):
        params = statement_parameters(BootstrapRequest(token_budget=0, terms=["warm"], agent="graphsvc-warm-up",
                                                       **fence), _NOW)
        reads.append(("bootstrap/head", params))
        reads.append((sections, section_runs(params, unread_head([_NOWHERE]))[1]))
    return reads


def _plan_after_a_change(tx: ManagedTransaction, statements: list[tuple[str, dict[str, Any]]]) -> None:
    setattr(tx, "_graphsvc_warming", True)  # not a write's real run (store.db.plan_observer)
    tx.run("CREATE ()").consume()
    for name, params in statements:
        run(tx, name, **params)
    raise _RollBack


def _plan_clean(tx: ManagedTransaction, name: str, params: dict[str, Any]) -> None:
    setattr(tx, "_graphsvc_warming", True)
    run(tx, name, **params)
    raise _RollBack


def _rolled_back(db: Database, work: Callable[[ManagedTransaction], None]) -> None:
    try:
        db.write(work)
    except _RollBack:
        pass


def warm_write_plans(db: Database, after_a_change: bool | None = None, part: str | None = None) -> None:
    """Plan every write statement in the transaction states it runs in (`planned_in`), rolled back
    (plans cached, nothing stored); only one of the two states when `after_a_change` says which
    (the two are independent: a re-warm runs them side by side), and only the statements of LATER
    (`part` "later") or the others ("first") when `part` says which. Without `after_a_change` (a
    start-up), the pack reads of a claim's write transaction too (`warm_claim_pack_reads`).

    After a change, all run in one transaction that first creates a node. Clean, each runs in a
    transaction of its own: some of them write even with arguments that match nothing (a tally
    MERGEd, a key created), and every statement after such a one would be planned for a changed
    transaction instead."""
    statements = [(name, params) for name, params in STATEMENTS
                  if part is None or (name in LATER) == (part == "later")]
    with db.longer_timeout():
        for variant in (False, True) if after_a_change is None else (after_a_change,):
            if variant:
                changed = [(name, params) for name, params in statements if True in planned_in(name)]
                _rolled_back(db, lambda tx: _plan_after_a_change(tx, changed))
            else:
                for name, params in statements:
                    if False in planned_in(name):
                        _rolled_back(db, lambda tx, name=name, params=params: _plan_clean(tx, name, params))
    if after_a_change is None:
        warm_claim_pack_reads(db)


def warm_claim_pack_reads(db: Database) -> None:
    """Plan the pack reads as a keyed claim runs them, after its first write (`_pack_reads`), in a
    transaction of their own: the last STATEMENTS take locks every writer needs, held until their
    transaction's roll-back, and a cold pack plan takes seconds. A re-warm makes these plans once
    the writes' own are in (only a claim with an idempotency key needs them)."""
    with db.longer_timeout():
        _rolled_back(db, lambda tx: _plan_after_a_change(tx, _pack_reads()))
