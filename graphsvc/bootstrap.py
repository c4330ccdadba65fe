"""memory_bootstrap read side: fenced candidate sets and the cycle check from Neo4j (SPEC §2–§4).

Neo4j computes the SETS, Python ranks and budgets them (graphsvc.pack). One pack is
ONE read transaction (a consistent snapshot) running two statements:

* `cypher/bootstrap/sections.cypher` returns the four candidate sets with exact totals.
  Constraints (kind constraint, tier active, not expired/superseded/tombstoned) come back
  complete: they are never capped. Decisions, traps and ready nodes come back in decay order
  (updated_at clamped to the request clock, desc; then seq asc), and only the rows a pack
  could show are sent: the first 11 ready (next action + 10) and the first 10 decisions/traps.
  That prefix is exactly the ranking order when no term matches, so a terms-free pack is exact.
  With terms, a row past the prefix is also sent when it MIGHT cover a term token: its lowered
  text contains a token or a non-ASCII character (Python's Unicode folding may turn "Café" into
  "cafe", Cypher's toLower cannot). Any other row has coverage 0, so the prefix beats it and
  `pack.assemble_pack` ranks the superset exactly as it would rank the full set.

* `cypher/bootstrap/live_edges.cypher` + `graphsvc.cycles` fail closed on a live blocks-cycle
  (SPEC §3). The live subgraph is the fenced task/epic nodes that are open, not tombstoned and
  not superseded. Numeric ids cannot increase all the way round a cycle, so every cycle has a
  BACK edge a->b with a.seq > b.seq; when the fence has none (edges created old -> new, the
  common case) Neo4j answers "no cycle" without sending a single edge. Otherwise it sends the
  live edges as two int lists and Python finds the canonical cycle in linear time (Kahn's
  peeling, then Tarjan + one BFS on what survives; see graphsvc.cycles). No path is ever
  enumerated, so a layered DAG with 2^49 paths costs what its edges cost.
  Why not a per-back-edge shortest-path search in Cypher (`SHORTEST 1` from b to a for each
  back edge a->b)? Measured on a 10,000-task DAG whose topological order is a random
  permutation of its ids (about 5,000 back edges): 2.8 s per pack, because every back edge
  costs a BFS, O(B * (V + E)). Sending ~10,000 int pairs and peeling them in Python: ~10 ms.

Round trips: one `Database.read` (one transaction, two statements) per pack.
Capsule ids are `cap-<seq>` (SPEC §1), so the cycle travels as seq ints and is named from them.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Iterable, Mapping

from neo4j import ManagedTransaction

from .candidates import Candidate
from .cycles import find_cycle
from .db import Database, run
from .models import BootstrapRequest
from .pack import SECTION_CAP, PackInputs, PackRequest, assemble_pack
from .textmatch import term_token_sets
from .timefmt import native

#: Rows the ready section can show: the next action plus SECTION_CAP more.
TOP_READY = 1 + SECTION_CAP


def pack_request(request: BootstrapRequest) -> PackRequest:
    """The validated HTTP/MCP/CLI request as the pure core's value."""
    return PackRequest(
        terms=tuple(request.terms or ()),
        project_id=request.project_id,
        project_prefix=request.project_prefix,
        token_budget=request.token_budget,
    )


def term_tokens(terms: Iterable[str]) -> list[str]:
    """The request's distinct term tokens, sorted (the Cypher prefilter's parameter)."""
    return sorted(frozenset().union(*term_token_sets(list(terms))))


def _candidate(row: Mapping[str, Any]) -> Candidate:
    updated_at = native(row["updated_at"])
    assert updated_at is not None, f"{row['id']} has no updated_at"
    return Candidate(
        id=row["id"],
        project_id=row["project_id"],
        headline=row["headline"],
        content=row["content"],
        updated_at=updated_at,
        tier=row["tier"],
        superseded=bool(row["superseded"]),
    )


def live_cycle(edges: Mapping[str, Any]) -> list[str] | None:
    """The canonical live cycle as capsule ids (smallest first, BLOCKS direction), or None."""
    if not edges["back_edges"]:
        return None
    cycle = find_cycle(edges["sources"], edges["targets"])
    return None if cycle is None else [f"cap-{seq}" for seq in cycle]


def read_inputs(db: Database, request: BootstrapRequest, now: datetime) -> PackInputs:
    """The pack's candidate sets and cycle, read in one transaction."""
    fence = {"project_id": request.project_id, "project_prefix": request.project_prefix}
    tokens = term_tokens(request.terms or ())

    def work(tx: ManagedTransaction) -> tuple[Any, list[str] | None]:
        sections = run(
            tx, "bootstrap/sections", now=now, tokens=tokens,
            top_ready=TOP_READY, top_section=SECTION_CAP, **fence,
        )[0]
        edges = run(tx, "bootstrap/live_edges", **fence)[0]
        return sections, live_cycle(edges)

    sections, cycle = db.read(work)
    return PackInputs(
        constraints=[_candidate(r) for r in sections["constraints"]],
        constraints_total=sections["constraints_total"],
        ready=[_candidate(r) for r in sections["ready"]],
        ready_total=sections["ready_total"],
        cycle=cycle,
        decisions=[_candidate(r) for r in sections["decisions"]],
        decisions_total=sections["decisions_total"],
        traps=[_candidate(r) for r in sections["traps"]],
        traps_total=sections["traps_total"],
    )


def build_pack(db: Database, request: BootstrapRequest, now: datetime) -> dict[str, Any]:
    """SPEC §4: the cold-start pack for a validated request at the request clock `now`."""
    return assemble_pack(read_inputs(db, request, now), pack_request(request), now)
