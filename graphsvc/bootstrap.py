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

* `cypher/bootstrap/cycle.cypher` fails closed on a live blocks-cycle (SPEC §3). The live
  subgraph is the fenced task/epic nodes that are open, not tombstoned and not superseded.
  Design (polynomial, no path enumeration): numeric ids cannot increase all the way round a
  cycle, so every cycle has a BACK edge a->b with a.seq > b.seq, in particular the edge into
  its smallest node m, and the rest of that cycle is a path m ->...-> a through nodes with
  seq > m.seq. The statement takes live back edges ordered by (b.seq, a.seq) and, for each,
  asks Neo4j's BFS shortest-path operator (`SHORTEST 1` with the live/fence/seq predicates
  inlined, so they prune the search) for a path b ->...-> a through live nodes with
  seq > b.seq, stopping at the first hit (LIMIT 1). The first hit's b is therefore the
  smallest node lying on any live cycle, and [b, ..., a] already starts at the smallest id;
  the cycle is that path closed by the back edge a->b. It is the same cycle for the same
  store: the back-edge order is total, and BFS over the same store expands in the same order.
  Cost: one pass over the fenced BLOCKS edges when there is no back edge (edges created
  old -> new, the common case); otherwise at most one pruned BFS, O(V + E), per candidate back
  edge, i.e. O(B * (V + E)) in the worst case. A back edge whose target is a new task blocking
  only old work dies at the first step (every onward node is older), so "new blocks old"
  graphs stay cheap too.

Round trips: one `Database.read` (one transaction, two statements) per pack.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Iterable, Mapping

from neo4j import ManagedTransaction

from .candidates import Candidate
from .db import Database, run
from .models import BootstrapRequest
from .pack import SECTION_CAP, PackInputs, PackRequest, assemble_pack
from .ranking import id_number
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


def canonical_cycle(ids: list[str]) -> list[str]:
    """Rotate a cycle (each id blocks the next, the last blocks the first) to start at its smallest id."""
    start = min(range(len(ids)), key=lambda i: id_number(ids[i]))
    return ids[start:] + ids[:start]


def read_inputs(db: Database, request: BootstrapRequest, now: datetime) -> PackInputs:
    """The pack's candidate sets and cycle, read in one transaction."""
    fence = {"project_id": request.project_id, "project_prefix": request.project_prefix}
    tokens = term_tokens(request.terms or ())

    def work(tx: ManagedTransaction) -> tuple[Any, list[str] | None]:
        sections = run(
            tx, "bootstrap/sections", now=now, tokens=tokens,
            top_ready=TOP_READY, top_section=SECTION_CAP, **fence,
        )[0]
        found = run(tx, "bootstrap/cycle", **fence)
        return sections, (list(found[0]["cycle"]) if found else None)

    sections, cycle = db.read(work)
    return PackInputs(
        constraints=[_candidate(r) for r in sections["constraints"]],
        constraints_total=sections["constraints_total"],
        ready=[_candidate(r) for r in sections["ready"]],
        ready_total=sections["ready_total"],
        cycle=canonical_cycle(cycle) if cycle else None,
        decisions=[_candidate(r) for r in sections["decisions"]],
        decisions_total=sections["decisions_total"],
        traps=[_candidate(r) for r in sections["traps"]],
        traps_total=sections["traps_total"],
    )


def build_pack(db: Database, request: BootstrapRequest, now: datetime) -> dict[str, Any]:
    """SPEC §4: the cold-start pack for a validated request at the request clock `now`."""
    return assemble_pack(read_inputs(db, request, now), pack_request(request), now)
