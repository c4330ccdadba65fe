"""memory_bootstrap read side: fenced candidate sets and the cycle check from Neo4j (SPEC §2–§4).

Neo4j computes the SETS, Python ranks and budgets them (graphsvc.core.pack). One pack is ONE
statement, `cypher/bootstrap/sections.cypher`, in one read transaction (one round trip, one
consistent snapshot). It returns:

* The four candidate sets with exact totals. Constraints (kind constraint, tier active, not
  expired/superseded/tombstoned) come back complete: they are never capped. Decisions, traps
  and ready nodes come back in decay order (updated_at clamped to the request clock, desc;
  then seq asc), and only the rows a pack could show are sent: the first 11 ready (next action
  + 10) and the first 10 decisions/traps. That prefix is exactly the ranking order when no term
  matches, so a terms-free pack is exact. With terms, a row past the prefix is also sent when it
  MIGHT cover a term token: its lowered text contains a token or a non-ASCII character
  (Python's Unicode folding turns "CAFÉ" into "cafe", Cypher's toLower cannot). Any other row
  covers nothing, so the prefix beats it and `pack.assemble_pack` ranks the superset exactly as
  it would rank the full set. Rows are only as large as the ranking needs.

* The fail-closed cycle check (SPEC §3). The live subgraph is the fenced task/epic nodes that
  are open, not tombstoned and not superseded. The ready set and the live edges come from the
  SAME pass over the live nodes and their blockers. Numeric ids cannot increase all the way
  round a cycle, so every cycle has a BACK edge a->b with a.seq > b.seq; when the fence has
  none (edges created old -> new, the common case) no edge is sent at all. Otherwise the live
  edges travel as int adjacency lists and `graphsvc.core.cycles` finds the canonical cycle in linear
  time (Kahn's peeling, then Tarjan + one BFS on what survives). No path is ever enumerated,
  so a layered DAG with 100 * 2^99 paths costs what its edges cost.
  Why not a shortest-path search in Cypher per back edge (`SHORTEST 1` from b to a for each
  back edge a->b, the first design)? Measured on a 10,000-task DAG whose topological order is a
  random permutation of its ids (~5,000 back edges): 2.8 s per pack, since every back edge
  costs a BFS, O(B * (V + E)); peeling ~10,000 int pairs in Python takes ~10 ms.

Capsule ids are `cap-<seq>` (SPEC §1), so the cycle travels as seq ints and is named from them;
`updated_at` travels as integer epoch microseconds (driver DateTime decoding is slow in Python).

Cost (bench/bootstrap_latency.py): each section seeks the (kind, project_id) index, so a pack
costs what its fence holds, not what the store holds. The blocks-DAG pass is linear in the
fence's live tasks and their blockers (~13 µs per live task on the 2-core dev box), which is
what dominates a scope holding thousands of open tasks or the unfenced whole store.
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from typing import Any, Iterable, Mapping

from graphsvc.core.candidates import Candidate
from graphsvc.core.cycles import find_cycle
from graphsvc.store.db import Database, run
from graphsvc.models import BootstrapRequest
from graphsvc.core.pack import SECTION_CAP, PackInputs, PackRequest, assemble_pack
from graphsvc.core.textmatch import term_token_sets

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


_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)


def _candidate(row: Mapping[str, Any]) -> Candidate:
    # updated_us = epochSeconds * 10^6 + microsecond: exact, and far cheaper than a driver DateTime.
    updated_at = _EPOCH + timedelta(microseconds=row["updated_us"])
    return Candidate(
        id=row["id"],
        project_id=row["project_id"],
        headline=row["headline"],
        content=row["content"],
        updated_at=updated_at,
        tier=row["tier"],
        superseded=bool(row["superseded"]),
    )


def live_cycle(back_edges: int, live_blocked_by: list[list[Any]]) -> list[str] | None:
    """The canonical live cycle as capsule ids (smallest first, BLOCKS direction), or None.

    `live_blocked_by` holds [target seq, [live source seqs]] for every live node with a live
    blocker; it is only sent when the live subgraph has a back edge.
    """
    if not back_edges:
        return None
    sources: list[int] = []
    targets: list[int] = []
    for target, blockers in live_blocked_by:
        sources.extend(blockers)
        targets.extend([target] * len(blockers))
    cycle = find_cycle(sources, targets)
    return None if cycle is None else [f"cap-{seq}" for seq in cycle]


def read_inputs(db: Database, request: BootstrapRequest, now: datetime) -> PackInputs:
    """The pack's candidate sets and cycle, read in one statement."""
    tokens = term_tokens(request.terms or ())

    sections = db.read(lambda tx: run(
        tx, "bootstrap/sections", now=now, tokens=tokens, top_ready=TOP_READY, top_section=SECTION_CAP,
        project_id=request.project_id, project_prefix=request.project_prefix,
    ))[0]
    return PackInputs(
        constraints=[_candidate(r) for r in sections["constraints"]],
        constraints_total=sections["constraints_total"],
        ready=[_candidate(r) for r in sections["ready"]],
        ready_total=sections["ready_total"],
        cycle=live_cycle(sections["back_edges"], sections["live_blocked_by"]),
        decisions=[_candidate(r) for r in sections["decisions"]],
        decisions_total=sections["decisions_total"],
        traps=[_candidate(r) for r in sections["traps"]],
        traps_total=sections["traps_total"],
    )


def build_pack(db: Database, request: BootstrapRequest, now: datetime) -> dict[str, Any]:
    """SPEC §4: the cold-start pack for a validated request at the request clock `now`."""
    return assemble_pack(read_inputs(db, request, now), pack_request(request), now)
