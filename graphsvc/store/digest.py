"""memory_digest read side (SPEC §9), in one read transaction.

The ready section is read by the pack's own statements (graphsvc.store.bootstrap.read_ready: the same
fences and clock, no terms; the head and the ready section's run) and rendered by the pack's own
function (graphsvc.core.pack.ready_section), so a digest's `ready` and `ready_total` are the pack's by
construction. Counts per kind, blocked tasks and the newest live capsules come from
`cypher/digest/sections.cypher`, the counts and blocked_total as the fence's census tallies
(graphsvc.store.maintain) less what has expired (graphsvc.core.digest.census_counts).
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from typing import Any

from neo4j import ManagedTransaction

from graphsvc.access import covers
from graphsvc.core.digest import BLOCKED_CAP, DigestParts, assemble_digest, census_counts
from graphsvc.core.pack import ready_section
from graphsvc.core.timefmt import iso_utc
from graphsvc.models import BootstrapRequest, DigestRequest
from graphsvc.store.bootstrap import inputs_from_row, read_ready, statement_parameters
from graphsvc.store.db import Database, run

_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)


def _ready(tx: ManagedTransaction, request: DigestRequest, now: datetime) -> tuple[dict[str, Any], list[Any], int]:
    # token_budget 0: the statement ships no more constraints than it must; ready does not depend on it.
    pack_request = BootstrapRequest(project_id=request.project_id, project_prefix=request.project_prefix,
                                    token_budget=0, agent=request.agent)
    params = statement_parameters(pack_request, now)
    # The head and the ready section's rows only (what a claim reads too): the pack's plans, without
    # the constraints, decisions and traps a digest does not show.
    sections = read_ready(tx, pack_request, params)
    head, rows, total = ready_section(inputs_from_row(sections, sections["loop_edges"], params["whole_weight"]),
                                      now, rows=0)
    return head, rows, total


def fence_seeks(project_id: str | None, project_prefix: str | None) -> list[dict[str, Any]]:
    """The fence as seeks of the project_id index (cypher/digest/sections.cypher): `start` a prefix of
    project ids, `exact` when only the project named `start` itself is meant. The whole store is the
    one prefix ''; a project outside the prefix also given is no seek at all (SPEC §2: fences AND)."""
    if project_id is not None:
        if project_prefix is not None and not covers(project_prefix, project_id):
            return []
        return [{"exact": True, "start": project_id}]
    if project_prefix is not None:
        return [{"exact": True, "start": project_prefix}, {"exact": False, "start": project_prefix + "/"}]
    return [{"exact": False, "start": ""}]


def _read(tx: ManagedTransaction, request: DigestRequest, now: datetime) -> DigestParts:
    head, rows, total = _ready(tx, request, now)
    found = run(tx, "digest/sections", now=now, seeks=fence_seeks(request.project_id, request.project_prefix),
                top_blocked=BLOCKED_CAP, newest=request.newest)[0]
    counts, blocked_total = census_counts(found["census"], found["expired"])
    newest = [{"headline": r["headline"], "id": r["id"], "kind": r["kind"], "project_id": r["project_id"],
               "updated_at": iso_utc(_EPOCH + timedelta(microseconds=r["updated_us"]))} for r in found["newest"]]
    handoff = None
    if found["handoff"] is not None:
        row = dict(found["handoff"])
        handoff = {key: value for key, value in row.items() if key != "updated_us" and value is not None}
        handoff["updated_at"] = iso_utc(_EPOCH + timedelta(microseconds=row["updated_us"]))
    return DigestParts(handoff=handoff, counts=dict(sorted(counts.items())), ready_head=head, ready_rows=rows,
                       ready_total=total, blocked=[dict(r) for r in found["blocked"]],
                       blocked_total=blocked_total, newest=newest)


def digest(db: Database, request: DigestRequest, now: datetime) -> dict[str, Any]:
    """SPEC §9: the scope's digest at the request clock `now`."""
    parts = db.read(lambda tx: _read(tx, request, now))
    return assemble_digest(parts, request.project_id, request.project_prefix, request.token_budget, now)
