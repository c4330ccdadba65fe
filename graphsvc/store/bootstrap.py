"""memory_bootstrap read side: fenced candidate sets and the cycle check from Neo4j (SPEC §2–§4).

Neo4j computes the SETS and their order, Python ranks and budgets them (graphsvc.core.pack). One
pack is read in one read transaction by two statements (`pack_statements`): `cypher/bootstrap/head.cypher`
(totals, the fence's projects, the cycle check) for every request shape, then one section
statement, `sections_fenced.cypher` for a fenced pack or `sections_store.cypher` for the whole
store, run twice (`section_runs`): for the constraints, then for ready, decisions and traps (once
for all four when the fence's live constraints fit the second run, `pack_runs`). The
section block is written once and names its section through `SECTIONS`; two small statements
instead of one large one keep what a freshly started Neo4j must plan before its first pack to a
fraction of a second each. Since schema v2 the statements read what the writes maintain
(graphsvc.store.maintain) instead of recomputing it per read:

* Sections come back already ranked with the key of graphsvc.core.ranking (term coverage against
  each capsule's stored folded tokens, then clamped updated_at, then seq), so only the rows a
  pack can show travel: the first 11 ready (next action + 10), the first 10 decisions and traps,
  and constraints (never count-capped) as far as the token budget could possibly hold them
  (`constraint_rows_needed`, then each row's least cost, `constraint_row_floor`; read first to the
  rows the budget likely needs, `constraint_rows`). Python ranks what arrives again with the same key, so the order is
  the one SPEC §4 defines whatever order the statement sends. With terms each row carries its
  coverage `score`, counted from its stored folded tokens, and Python ranks by that: the stored
  tokens stand for the text here (maintained on every write, checked by `graphsvc verify`).

* Totals are exact and cost the fence's projects, not its capsules: the sum of the fence's
  maintained per-project tallies, less the listed capsules whose valid_to has passed (schema v3).

* Ready tasks are sought through the indexed, maintained `ready`: blocked tasks are never visited.

* Claims (SPEC §12): no section reads a row under a live lease; the head finds the fence's live
  leases through the `lease_until` index, counts the others' (`held_by_others`, taken off
  `ready_total`) and returns the asking agent's own (`held`), which the pack shows first.

* No section sorts its fence: the decay order comes from range indexes read in order up to the
  section's cap (plus the boundary's ties): `updated_at` with no fence, `(project_id, updated_at)`
  per project of a fence (its tallies list them). With terms the rows holding a term token come
  from the full-text index over the stored `tokens`, `project_id` and `kind` (`token_queries`, the
  section's `kind_clause`, and with a fence its project ids); only their union is ranked.

* The fail-closed cycle check (SPEC §3): the writes keep a topological order of the BLOCKS graph
  in which every cycle contains an edge marked `closes_loop` (graphsvc.store.blocks_order). A fence
  holding no live marked edge is acyclic: one index lookup proves it. Otherwise its live edges
  (fenced task/epic nodes that are open, not tombstoned, not superseded) travel as int adjacency
  lists and `graphsvc.core.cycles` names the canonical cycle in linear time (Kahn's peeling, then
  Tarjan + one BFS on what survives). No path is ever enumerated.

Capsule ids are `cap-<seq>` (SPEC §1), so the cycle travels as seq ints and is named from them;
`updated_at` travels as integer epoch microseconds (driver DateTime decoding is slow in Python).
"""

from __future__ import annotations

from bisect import bisect_right
from datetime import datetime, timedelta, timezone
from functools import lru_cache
from typing import Any, Iterable, Mapping

from graphsvc.core.candidates import Candidate
from graphsvc.core.cycles import find_cycle
from graphsvc.store.db import Database, run
from graphsvc.models import BootstrapRequest
from graphsvc.core.budget import CHARS_PER_TOKEN
from graphsvc.core.pack import (
    ROW_CHARS_BESIDES_TEXT, SECTION_CAP, PackInputs, PackRequest, assemble_pack, constraint_rows_likely,
    constraint_rows_needed, constraint_run_complete, row_floor,
)
from graphsvc.core.textmatch import term_token_sets
from graphsvc.store.maintain import stored_token

#: Rows the ready section can show: the next action plus SECTION_CAP more.
TOP_READY = 1 + SECTION_CAP
#: A Cypher LIMIT is a 64-bit integer and token_budget is not bounded; no store holds this many rows.
MAX_LIMIT = 2**40


def pack_request(request: BootstrapRequest, scope: tuple[str, ...] | None = None) -> PackRequest:
    """The validated HTTP/MCP/CLI request as the pure core's value (`scope`: a scoped key's prefixes
    when the request has no fence of its own, graphsvc.access.Principal.fence)."""
    return PackRequest(
        terms=tuple(request.terms or ()),
        project_id=request.project_id,
        project_prefix=request.project_prefix,
        token_budget=request.token_budget,
        key_scope=scope,
    )


def term_parameters(terms: Iterable[str]) -> dict[str, Any]:
    """The request's terms as the statement ranks with them: each term's token set, and all distinct tokens."""
    # In the form `tokens` stores them (graphsvc.store.maintain.stored_token), so they compare equal.
    token_sets = [frozenset(map(stored_token, term)) for term in term_token_sets(list(terms))]
    tokens = sorted(frozenset().union(*token_sets))
    term_sets = [sorted(tokens) for tokens in token_sets]
    return {"term_sets": term_sets, "tokens": tokens, "token_queries": token_queries(tokens),
            "rank_query": rank_query(term_sets, tokens), "whole_weight": whole_weight(tokens),
            "at_least": at_least_queries(term_sets, tokens), "projects_per_query": PROJECTS_PER_QUERY}


#: Lucene refuses a query of more than 1024 clauses (maxClauseCount); 64 terms can hold ~4,000 tokens.
TOKENS_PER_QUERY = 512
#: A fenced query adds one `project_id` clause per project of the fence, this many per query at most
#: (token clauses + project clauses stay under the 1024 Lucene allows).
PROJECTS_PER_QUERY = 256


def _quoted(token: str) -> str:
    """A token as one quoted Lucene term, quotes and backslashes escaped."""
    return '"' + token.replace("\\", "\\\\").replace('"', '\\"') + '"'


def token_queries(tokens: list[str]) -> list[str]:
    """Lucene queries that together find, through the `capsule_terms` full-text index, every capsule holding any token.

    Each token is one quoted term of the `tokens` field (a phrase only where the whitespace
    analyzer splits a token past 255 UTF-16 units, as it split the indexed value; such a token
    arrives marked, graphsvc.store.maintain.stored_token, like the stored one), OR'ed, at most
    TOKENS_PER_QUERY per query. The field is named: the same index holds `project_id`, which a
    fenced pack's query adds as a required clause (cypher/bootstrap/sections_fenced.cypher), and
    `kind`, which each section's query requires (`kind_clause`).
    Folded tokens are letters and digits (plus `~` marks in a long one; inside quotes Lucene's
    parser takes `~` literally), but quotes and backslashes are escaped all the same.
    No terms: no query ([]).
    """
    quoted = [_quoted(t) for t in tokens]
    return ["tokens:(" + " OR ".join(quoted[start:start + TOKENS_PER_QUERY]) + ")"
            for start in range(0, len(quoted), TOKENS_PER_QUERY)]


#: The most kinds one query names in its `kind_clause` (the ready section's task and epic).
KIND_CLAUSES = 2
#: The most leaf clauses a ranking query may have: with PROJECTS_PER_QUERY project clauses and
#: KIND_CLAUSES kind clauses, at most 1024.
RANK_CLAUSES = 1024 - PROJECTS_PER_QUERY - KIND_CLAUSES
#: Lucene's whitespace analyzer cuts tokens at 255 UTF-16 units: a longer token is not one indexed term.
MAX_TERM_UNITS = 255


def whole_weight(tokens: list[str]) -> int:
    """What one whole term covered weighs in a coverage score: more than all distinct tokens together,
    so `whole_terms * whole_weight + tokens` orders rows as graphsvc.core.ranking's key does."""
    return len(tokens) + 1


def _exact_term(token: str) -> str:
    """A Lucene regexp matching exactly this indexed token (regexp queries score a constant)."""
    return "tokens:/" + "".join(ch if ch.isalnum() else "\\" + ch for ch in token) + "/"


def rank_query(term_sets: list[list[str]], tokens: list[str]) -> str | None:
    """A Lucene query whose score IS a capsule's coverage: whole terms * whole_weight + distinct tokens.

    Each token is a regexp clause of constant score 1 (a regexp of the literal token: regexp queries
    score their boost, not BM25); each term is a group requiring all its tokens, worth whole_weight.
    So Neo4j can take the k best rows by coverage from the index in score order and stop (the cut,
    cypher/bootstrap/sections_*.cypher) instead of reading every row that holds a token. None when
    exact scores cannot be had (too many clauses for one query, a token the analyzer splits): the
    statement then computes coverage from each row's stored tokens.
    """
    if not tokens or len(tokens) + sum(map(len, term_sets)) > RANK_CLAUSES:
        return None
    if any(len(token.encode("utf-16-le")) // 2 > MAX_TERM_UNITS for token in tokens):
        return None
    weight = whole_weight(tokens)
    whole = ["(" + " ".join(f"+{_exact_term(t)}^{weight if i == 0 else 0}" for i, t in enumerate(ts)) + ")"
             for ts in term_sets]
    return " ".join(whole + [f"{_exact_term(t)}^1" for t in tokens])


#: Up to this many distinct term tokens a request also sends `at_least_queries` (2^n token sets to weigh).
AT_LEAST_TOKENS = 8


def coverage_score(term_sets: list[list[str]], held: frozenset[str] | set[str], weight: int) -> int:
    """The rank query's score of a capsule holding `held` among the request's tokens."""
    return sum(weight for ts in term_sets if held.issuperset(ts)) + len(held)


def minimal_token_sets(term_sets: list[list[str]], tokens: list[str]) -> dict[int, list[tuple[str, ...]]]:
    """For each coverage score a capsule can reach, the smallest token sets that reach at least it.

    A capsule scores at least s exactly when it holds one of them whole: coverage only grows with
    the tokens held, so {held: score(held) >= s} is closed upwards and these are its minimal members.
    A set is minimal for every s above its best one-token-smaller subset's score, up to its own.
    """
    # Token sets as bit masks over `tokens` (sorted, so each set below comes out sorted too).
    weight = whole_weight(tokens)
    bit_of = {t: 1 << i for i, t in enumerate(tokens)}
    term_masks = [sum(bit_of[t] for t in set(ts)) for ts in term_sets]
    bits = [1 << i for i in range(len(tokens))]
    scores = [weight * sum(mask & tm == tm for tm in term_masks) + mask.bit_count() for mask in range(1 << len(tokens))]
    levels = sorted(set(scores) - {0})
    reached: dict[int, list[tuple[str, ...]]] = {s: [] for s in levels}
    for mask, score in enumerate(scores):
        below = max((scores[mask ^ bit] for bit in bits if mask & bit), default=0)
        for level in levels[bisect_right(levels, below):bisect_right(levels, score)]:
            reached[level].append(tuple(t for t, bit in zip(tokens, bits) if mask & bit))
    return reached


def at_least_queries(term_sets: list[list[str]], tokens: list[str]) -> list[list[Any]]:
    """[score, Lucene query] pairs: each query matches exactly the capsules whose coverage score is at least score.

    The read after the cut (cypher/bootstrap/sections_*.cypher) adds the cut's query as a required,
    zero-weight clause, so Lucene hands over only the rows at or above the cut. `score >= cut` on
    the rank query alone left Neo4j yielding every capsule holding any token, in score order, only
    to drop them (at 1M with the bench's frequent words ~21k rows per whole-store pack, ~0.7 µs
    each). [] without a rank query or past AT_LEAST_TOKENS tokens: the statement then filters by
    score alone, as before. A score whose query would pass Lucene's clause limit is left out.
    """
    return [list(pair) for pair in _at_least_queries(tuple(map(tuple, term_sets)), tuple(tokens))]


@lru_cache(maxsize=256)
def _at_least_queries(term_sets: tuple[tuple[str, ...], ...], tokens: tuple[str, ...]) -> tuple[tuple[int, str], ...]:
    """at_least_queries, cached: a request's terms repeat, and 2^8 token sets take ~1 ms to weigh."""
    as_lists, token_list = [list(ts) for ts in term_sets], list(tokens)
    if rank_query(as_lists, token_list) is None or len(tokens) > AT_LEAST_TOKENS:
        return ()
    budget = RANK_CLAUSES - len(tokens) - sum(map(len, term_sets))
    return tuple((score, " ".join("(" + " ".join("+tokens:" + _quoted(t) for t in held) + ")" for held in sets))
                 for score, sets in minimal_token_sets(as_lists, token_list).items()
                 if sum(map(len, sets)) <= budget)


def kind_clause(kinds: Iterable[str]) -> str:
    """The Lucene clause matching the capsules of these kinds in the `kind` field of `capsule_terms`.

    Since schema v5 one full-text index holds every kind (cypher/schema.cypher: each index a
    transaction touches costs a Lucene refresh when it commits), so a query names the kinds it
    reads. A query requires this clause at weight 0 (`+(...)^0`): it filters, and adds nothing to
    the coverage score. Kinds are quoted like tokens, sorted so one kind set is one string.
    """
    return "kind:(" + " ".join(_quoted(kind) for kind in sorted(set(kinds))) + ")"


_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)


def _candidate(row: Mapping[str, Any], weight: int | None) -> Candidate:
    # updated_us = epochSeconds * 10^6 + microsecond: exact, and far cheaper than a driver DateTime.
    updated_at = _EPOCH + timedelta(microseconds=row["updated_us"])
    lease_us = row.get("lease_until_us")
    return Candidate(
        id=row["id"],
        project_id=row["project_id"],
        headline=row["headline"],
        content=row["content"],
        updated_at=updated_at,
        tier=row["tier"],
        superseded=bool(row["superseded"]),
        # The statement's coverage score, whole terms * weight + distinct tokens (tokens < weight),
        # as (whole, tokens): ranking uses it instead of tokenizing the text again.
        coverage=None if weight is None else divmod(row["score"], weight),
        lease_until=None if lease_us is None else _EPOCH + timedelta(microseconds=lease_us),
    )


def live_cycle(loop_edges: int, live_blocked_by: list[list[Any]]) -> list[str] | None:
    """The canonical live cycle as capsule ids (smallest first, BLOCKS direction), or None.

    `live_blocked_by` holds [target seq, [live source seqs]] for every live node with a live
    blocker; it is only sent when the fence holds a live edge marked `closes_loop`.
    """
    if not loop_edges:
        return None
    sources: list[int] = []
    targets: list[int] = []
    for target, blockers in live_blocked_by:
        sources.extend(blockers)
        targets.extend([target] * len(blockers))
    cycle = find_cycle(sources, targets)
    return None if cycle is None else [f"cap-{seq}" for seq in cycle]


def inputs_from_row(sections: Mapping[str, Any], loop_edges: int, whole_weight: int | None = None) -> PackInputs:
    """The statement's one row as the pure core's input. `whole_weight`: the request's, when each
    row carries its coverage `score` (the pack statements); None when rows are unscored."""
    def candidates(section: str) -> list[Candidate]:
        return [_candidate(row, whole_weight) for row in sections[section]]

    return PackInputs(
        constraints=candidates("constraints"),
        constraints_total=sections["constraints_total"],
        ready=candidates("ready"),
        ready_total=sections["ready_total"],
        cycle=live_cycle(loop_edges, sections["live_blocked_by"]),
        decisions=candidates("decisions"),
        decisions_total=sections["decisions_total"],
        traps=candidates("traps"),
        traps_total=sections["traps_total"],
        held=[_candidate(row, whole_weight) for row in sections.get("held") or ()],
        held_by_others=sections.get("held_by_others") or 0,
    )


#: The ranked sections as the section statements read them: the maintained `counted` value that
#: lists a capsule in the section, the full-text clause naming its kinds (`kind_clause`), whether
#: expired rows drop out (traps are listed whatever their valid_to), and how many rows the pack can
#: show (constraints: no count cap, SPEC §4; the budget bounds them).
CONSTRAINTS = {"name": "constraints", "counted": "constraints", "kinds": kind_clause(["constraint"]), "live": True,
               "cap": None}
CAPPED_SECTIONS = (
    {"name": "ready", "counted": "ready", "kinds": kind_clause(["task", "epic"]), "live": True, "cap": TOP_READY},
    {"name": "decisions", "counted": "decisions", "kinds": kind_clause(["decision"]), "live": True,
     "cap": SECTION_CAP},
    {"name": "traps", "counted": "traps", "kinds": kind_clause(["failure_pattern"]), "live": False,
     "cap": SECTION_CAP},
)
SECTIONS = (CONSTRAINTS, *CAPPED_SECTIONS)


def pack_statements(project_id: str | None, project_prefix: str | None,
                    scope: tuple[str, ...] | None = None) -> tuple[str, str]:
    """The head statement and the section statement serving a pack of this shape: a key's scope
    fences like a request's fence (the head lists the scope's projects, the fenced sections read them)."""
    unfenced = project_id is None and project_prefix is None and scope is None
    sections = "bootstrap/sections_store" if unfenced else "bootstrap/sections_fenced"
    return "bootstrap/head", sections


def statement_parameters(request: BootstrapRequest, now: datetime,
                         scope: tuple[str, ...] | None = None) -> dict[str, Any]:
    """What the pack statements take for a validated request at the request clock `now`; `scope`
    (disjoint prefixes, graphsvc.access.normal_prefixes) restricts a pack with no fence of its own."""
    return {
        "scope": list(scope) if scope is not None else None,
        "now": now, "top_constraints": min(constraint_rows_needed(request.token_budget), MAX_LIMIT),
        "likely_constraints": min(constraint_rows_likely(request.token_budget), MAX_LIMIT),
        "budget_chars": min(CHARS_PER_TOKEN * request.token_budget, MAX_LIMIT),
        "row_chars_besides_text": ROW_CHARS_BESIDES_TEXT,
        "project_id": request.project_id, "project_prefix": request.project_prefix,
        "agent": getattr(request, "agent", None),
        **term_parameters(request.terms or ()),
    }


def section_runs(params: dict[str, Any], head: Mapping[str, Any], constraints_top: int | None = None) -> list[dict[str, Any]]:
    """The section statement's two runs after the `head` row: the constraints, bounded by the budget
    (to `constraints_top` rows, by default every row the budget could hold: `top_constraints`);
    then the capped sections, each read to the largest cap (Cypher's LIMIT cannot name the section)
    and sliced to its own.

    A section whose live rows in the fence (the head's `<name>_total`) number no more than the run
    reads is marked `all_rows`: the statement then reads its rows without first seeking the floor
    of its k freshest, a pass that would visit every one of them only to find the oldest (a large
    budget over a small store, a project with few traps). Reading every row is never wrong, only
    slower, so a total that a concurrent write has since outgrown costs time, not correctness."""
    shared = {**params, "fence_projects": head["fence_projects"]}

    def marked(sections: Iterable[dict[str, Any]], top: int) -> list[dict[str, Any]]:
        return [{**section, "all_rows": head[f"{section['name']}_total"] <= top} for section in sections]

    top_capped = max(s["cap"] for s in CAPPED_SECTIONS)
    top = params["top_constraints"] if constraints_top is None else constraints_top
    return [
        {**shared, "sections": marked([CONSTRAINTS], top), "top": top},
        {**shared, "sections": marked(CAPPED_SECTIONS, top_capped), "top": top_capped, "budget_chars": MAX_LIMIT},
    ]


def pack_runs(params: dict[str, Any], head: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The section statement's runs for a pack: `section_runs`, its constraints read to the rows the
    budget likely needs (`likely_constraints`, completed by `constraint_rows` when they all fit), or
    ONE run of all four sections when the fence's live constraints (the head's total) are no more
    than the capped run's top.

    Why: the constraints have a run of their own because its top follows the budget and Cypher's
    LIMIT cannot name a section; when they all fit the capped run's top they are read there, whole
    (and every one ships: the budget trims them in Python as it does any constraint past those that
    could fit). That saves a pack of a small fence one statement of its three, ~1 ms of a ~12 ms
    pack at 1k capsules. A write committed between the head and the run may have added constraints
    past that top: `read_sections` then reads them with their own run, as if none had been merged."""
    constraints, capped = section_runs(params, head, params["likely_constraints"])
    if head["constraints_total"] > capped["top"]:
        return [constraints, capped]
    return [{**capped, "sections": [{**CONSTRAINTS, "all_rows": True}, *capped["sections"]]}]


def unread_head(fence_projects: list[str]) -> dict[str, Any]:
    """A head row for section runs made without reading the head (the warm-up, plan checks): its
    totals unknown, so no section is read whole."""
    return {"fence_projects": fence_projects, **{f"{section['name']}_total": MAX_LIMIT for section in SECTIONS}}


def _section_rows(tx: Any, statement: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """One run of a section statement: each section it names, with its rows."""
    return {record["section"]: record["rows"] for record in run(tx, statement, **arguments)}


def constraint_rows(tx: Any, statement: str, params: dict[str, Any], head: Mapping[str, Any],
                    likely: Mapping[str, Any] | None = None) -> list[Any]:
    """The constraints a pack can show, in rank order: the run to the rows the budget likely needs
    (`likely`, when the caller ran it already), then, only when that run is not complete
    (graphsvc.core.pack.constraint_run_complete: it shipped its `top` rows and all of them fit), the
    run to every row the budget could hold.

    Why two: a run's cost follows its `top` (the floor seek, the rows from the floor and their sort
    all read `top` rows), and `constraint_rows_needed` assumes rows of 53 characters where a store's
    least costs are ~130-190: by that bound alone a pack of 50,000 tokens reads ~3,800 constraints to
    ship ~1,100 and show ~540. A run's rows are a prefix of a longer run's (one total order, LIMIT), so the second
    run only adds rows; a store of very short rows pays one run more."""
    if likely is None:
        likely = section_runs(params, head, params["likely_constraints"])[0]
    rows = _section_rows(tx, statement, likely)["constraints"]
    if likely["top"] < params["top_constraints"] and not constraint_run_complete(
            [row_floor(r["id"], r["headline"], r["project_id"]) for r in rows], likely["top"], likely["budget_chars"]):
        rows = _section_rows(tx, statement, section_runs(params, head)[0])["constraints"]
    return rows


def read_sections(tx: Any, request: BootstrapRequest, params: dict[str, Any]) -> dict[str, Any]:
    """The pack's head row with each ranked section's rows added under its name, in one transaction."""
    head_statement, section_statement = pack_statements(request.project_id, request.project_prefix,
                                                        params["scope"] and tuple(params["scope"]))
    row = dict(run(tx, head_statement, **params)[0])
    sections: dict[str, Any] = {section["name"]: [] for section in SECTIONS}
    # No project of the fence lists a capsule: every section is empty, nothing to read.
    if row["fence_projects"]:
        runs = pack_runs(params, row)
        if len(runs) == 1:
            sections.update(_section_rows(tx, section_statement, runs[0]))
            if len(sections["constraints"]) >= runs[0]["top"]:  # the total was outgrown
                sections["constraints"] = constraint_rows(tx, section_statement, params, row)
        else:
            sections["constraints"] = constraint_rows(tx, section_statement, params, row, runs[0])
            sections.update(_section_rows(tx, section_statement, runs[1]))
    return {**row, **sections}


def read_ready(tx: Any, request: BootstrapRequest, params: dict[str, Any],
               head: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """What memory_claim needs of a pack (SPEC §12), in one transaction: the head row (`head`, when the
    caller read it already in this transaction) and the ready section's rows, the other sections left
    empty. The ready rows come from the capped run's statement and arguments, with only the ready
    section named: the same plan as a pack's, without the constraints, decisions and traps."""
    if head is None:
        head_statement, _ = pack_statements(request.project_id, request.project_prefix,
                                            params["scope"] and tuple(params["scope"]))
        head = run(tx, head_statement, **params)[0]
    row = dict(head)
    _, section_statement = pack_statements(request.project_id, request.project_prefix,
                                           params["scope"] and tuple(params["scope"]))
    sections: dict[str, Any] = {section["name"]: [] for section in SECTIONS}
    if row["fence_projects"]:
        capped = section_runs(params, row)[1]
        arguments = {**capped, "sections": [s for s in capped["sections"] if s["name"] == "ready"]}
        sections.update(_section_rows(tx, section_statement, arguments))
    return {**row, **sections}


def read_inputs(db: Database, request: BootstrapRequest, now: datetime,
                scope: tuple[str, ...] | None = None) -> PackInputs:
    """The pack's candidate sets and cycle, read in one transaction."""
    params = statement_parameters(request, now, scope)
    sections = db.read(lambda tx: read_sections(tx, request, params))
    return inputs_from_row(sections, sections["loop_edges"], params["whole_weight"])


def build_pack(db: Database, request: BootstrapRequest, now: datetime,
               scope: tuple[str, ...] | None = None) -> dict[str, Any]:
    """SPEC §4: the cold-start pack for a validated request at the request clock `now`; `scope`: a
    scoped key's prefixes when the request has no fence (docs/keys.md: the union of the subtrees)."""
    return assemble_pack(read_inputs(db, request, now, scope), pack_request(request, scope), now)
