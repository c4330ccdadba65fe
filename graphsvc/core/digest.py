"""memory_digest (SPEC §9): a scope at a glance for an agent starting a session.

Pure: the store reads the counts, blocked tasks and newest capsules (graphsvc.store.digest) and the
ready section through the pack's own statement and `graphsvc.core.pack.ready_section`, so digest's
`ready` is byte for byte the pack's. This module renders the body under §4's whole-body budget.

Top level in this order: advisory, notice, as_of, scope?, handoff?, counts, ready, ready_total,
blocked?, blocked_total, newest?, handles?, budget. The floor is the envelope (with the exact counts
and totals), the handoff and the ready head (next action, cycle or nothing-ready marker); then
ready rows, blocked rows and newest rows fill in that order, as the longest prefix whose whole body
fits. token_budget 0 keeps no section (counts and totals stay: they are the envelope).
`counts` lists the kinds the scope holds (a kind with no capsule is left out), each with its
`live`, `superseded`, `expired` and `tombstoned` counts (each capsule once, in the first of the
states tombstoned, superseded, expired that it is in, else live).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from graphsvc.core.budget import longest_fitting_prefix, settle_self_count
from graphsvc.core.canonical import canonical_json
from graphsvc.core.pack import ADVISORY, NOTICE, as_of, scope_of

__all__ = ["BLOCKED_CAP", "COUNT_STATES", "DigestParts", "assemble_digest", "census_counts"]

BLOCKED_CAP = 10
COUNT_STATES = ("live", "superseded", "expired", "tombstoned")
Row = dict[str, Any]


@dataclass(frozen=True)
class DigestParts:
    """What the store read for one digest, rows already in order and capped."""

    handoff: Row | None
    counts: dict[str, dict[str, int]]
    ready_head: Row  # the ready section without rows (graphsvc.core.pack.ready_section)
    ready_rows: Sequence[Row]
    ready_total: int
    blocked: Sequence[Row]
    blocked_total: int
    newest: Sequence[Row]


def census_counts(census: Sequence[Row], expired: Sequence[Row]) -> tuple[dict[str, dict[str, int]], int]:
    """SPEC §9's counts per kind (the kinds the fence holds, in name order) and blocked_total, from
    the fence's census tallies ({census: '<kind>:<state>', n}, per project) and its expired blocked
    or current capsules ({census, n}): blocked and current ones are live unless expired."""
    stored: dict[str, int] = {}
    for tally in census:
        stored[tally["census"]] = stored.get(tally["census"], 0) + tally["n"]
    gone = {entry["census"]: entry["n"] for entry in expired}
    counts: dict[str, dict[str, int]] = {}
    blocked_total = 0
    for name, n in stored.items():
        kind, state = name.rsplit(":", 1)
        row = counts.setdefault(kind, dict.fromkeys(COUNT_STATES, 0))
        if state in ("current", "blocked"):
            row["live"] += n - gone.get(name, 0)
            row["expired"] += gone.get(name, 0)
            if state == "blocked":
                blocked_total += n - gone.get(name, 0)
        else:
            row[state] += n
    return {kind: counts[kind] for kind in sorted(counts) if any(counts[kind].values())}, blocked_total


def _with_ready_rows(head: Row, rows: list[Row]) -> Row:
    section = dict(head)
    if rows:
        section["ready"] = rows
    return section


def _handles(body: Row) -> list[str]:
    ids: list[str] = []
    if "handoff" in body:
        ids.append(body["handoff"]["id"])
    ready = body.get("ready", {})
    if "next_action" in ready:
        ids.append(ready["next_action"]["id"])
    ids.extend(row["id"] for row in ready.get("ready", []))
    ids.extend(ready.get("cycle", []))
    ids.extend(row["id"] for row in body.get("blocked", []))
    ids.extend(row["id"] for row in body.get("newest", []))
    return list(dict.fromkeys(ids))


def _render(envelope: Row, parts: DigestParts, kept: int | None, budget: Row) -> Row:
    body = dict(envelope)
    if kept is not None and parts.handoff is not None:
        body["handoff"] = parts.handoff
    body["counts"] = parts.counts
    ready: list[Row] = []
    blocked: list[Row] = []
    newest: list[Row] = []
    if kept is not None:
        left = kept
        for source, target in ((parts.ready_rows, ready), (parts.blocked, blocked), (parts.newest, newest)):
            target.extend(source[:left])
            left -= len(target)
        body["ready"] = _with_ready_rows(parts.ready_head, ready)
    body["ready_total"] = parts.ready_total
    if blocked:
        body["blocked"] = blocked
    body["blocked_total"] = parts.blocked_total
    if newest:
        body["newest"] = newest
    handles = _handles(body)
    if handles:
        body["handles"] = handles
    body["budget"] = budget
    return body


def _budget(floor: int, token_budget: int, trimmed: int) -> Row:
    return {"floor_tokens": floor, "token_budget": token_budget, "trimmed_by_budget": trimmed, "used_tokens": 0}


def _settled(body: Row) -> Row:
    body["budget"]["used_tokens"] = settle_self_count(len(canonical_json(body)) - 1)
    return body


def assemble_digest(parts: DigestParts, project_id: str | None, project_prefix: str | None, token_budget: int,
                    now: datetime) -> Row:
    envelope: Row = {"advisory": ADVISORY, "notice": NOTICE, "as_of": as_of(now)}
    scope = scope_of(project_id, project_prefix)
    if scope:
        envelope["scope"] = scope
    content = len(parts.ready_rows) + len(parts.blocked) + len(parts.newest)
    probe = _render(envelope, parts, 0, _budget(0, 0, content))
    floor = settle_self_count(len(canonical_json(probe)) - 3, occurrences=3)
    if token_budget == 0:
        return _settled(_render(envelope, parts, None, _budget(floor, 0, content)))
    measured: dict[int, Row] = {}

    def with_rows(kept: int) -> Row:
        if kept not in measured:
            measured[kept] = _settled(_render(envelope, parts, kept, _budget(floor, token_budget, content - kept)))
        return measured[kept]

    kept = longest_fitting_prefix(content, lambda k: with_rows(k)["budget"]["used_tokens"] <= token_budget)
    return with_rows(kept)
