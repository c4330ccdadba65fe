"""memory_retrieve read side (SPEC §8): the aliases in scope, then the raw matches, in one read transaction.

Python builds the groups (graphsvc.core.retrieve.build_groups) from the request's terms and the
aliases taught in the scopes enclosing the fence (graphsvc.store.aliases), and sends their token
sets, in the form `tokens` stores them (graphsvc.store.maintain.stored_token), to
`cypher/retrieve/matches.cypher`. That statement finds candidates through the full-text
`capsule_terms` index, counts exclusions and eligible matches exactly, ranks the eligible ones by a
coverage score (Lucene's, when no alias is in play: `scored_query`) and ships only the first `limit`.
Python names each shipped row's matched terms, ranks again with the same key and fills the budget
(graphsvc.core.retrieve).
Nothing is written: no counter, no log.
"""

from __future__ import annotations

import re
from datetime import datetime, timedelta, timezone
from typing import Any

from neo4j import ManagedTransaction

from graphsvc.core.candidates import Candidate
from graphsvc.core.retrieve import Group, Match, RetrieveFound, RetrieveRequest, assemble_retrieve, build_groups, covers
from graphsvc.models import RetrieveRequest as RetrieveInput
from graphsvc.store.aliases import enclosing_scopes, read_pairs
from graphsvc.store.bootstrap import RANK_CLAUSES, _quoted, kind_clause, rank_query, whole_weight
from graphsvc.store.db import Database, run
from graphsvc.store.maintain import stored_token

_PROBE = re.compile(r"cap-[1-9][0-9]*")
_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)


def core_request(request: RetrieveInput) -> RetrieveRequest:
    return RetrieveRequest(terms=tuple(request.terms), project_id=request.project_id,
                           project_prefix=request.project_prefix,
                           kinds=tuple(request.kinds) if request.kinds is not None else None,
                           limit=request.limit, token_budget=request.token_budget)


def stored_groups(groups: list[Group]) -> list[Group]:
    """The groups with their tokens as `tokens` stores them (a token too long for Lucene is marked)."""
    def stored(tokens: frozenset[str]) -> frozenset[str]:
        return frozenset(map(stored_token, tokens))
    return [Group(g.term, stored(g.own), tuple(stored(a) for a in g.aliases)) for g in groups]


#: Lucene's query syntax characters, escaped with a backslash in an unquoted term.
_LUCENE_SPECIAL = frozenset('\\+-!():^[]"{}~*?|&/')
#: Lucene's whitespace analyzer cuts a token at 255 UTF-16 units.
_TOKEN_UNITS = 255


def prefix_clause(project_prefix: str) -> str | None:
    """A Lucene clause finding at least every capsule under `project_prefix` (SPEC §2: the project
    itself or a project whose id starts with `prefix/`), or None when no clause can.

    The index holds `project_id` through the whitespace analyzer, so the first term of an id under
    the prefix starts with the prefix as long as the prefix holds no whitespace and fits in one
    term: a prefix query on it is then a superset of the fence (ids such as `prefixx` too), which
    the statement filters exactly. Python's whitespace includes every character Java's does."""
    if any(char.isspace() for char in project_prefix) or len(project_prefix.encode("utf-16-le")) // 2 > _TOKEN_UNITS:
        return None
    return "project_id:" + "".join("\\" + char if char in _LUCENE_SPECIAL else char for char in project_prefix) + "*"


def lucene_queries(alternatives: list[list[str]], project_id: str | None,
                   kinds: list[str] | None = None, project_prefix: str | None = None) -> list[str]:
    """Queries that together find every capsule holding all tokens of at least one alternative.

    Each alternative is a group of required quoted terms; alternatives are OR'ed, as many per query
    as keep it under Lucene's clause limit. An exact project fence is a required clause as well, so
    Lucene returns only that project's rows; so is a prefix fence's `prefix_clause` when there is
    one (without it Lucene would hand over the whole store's matches, to be filtered here), and so
    are the request's kinds (`kind_clause`: one index holds every kind). No kinds named: every kind,
    no clause.
    """
    queries: list[str] = []
    clauses: list[str] = []
    used = 0
    for tokens in alternatives:
        if clauses and used + len(tokens) > RANK_CLAUSES:
            queries.append(" ".join(clauses))
            clauses, used = [], 0
        clauses.append("(" + " ".join("+tokens:" + _quoted(t) for t in tokens) + ")")
        used += len(tokens)
    if clauses:
        queries.append(" ".join(clauses))
    if project_id is not None:
        queries = [f"+project_id:{_quoted(project_id)} +({query})" for query in queries]
    elif project_prefix is not None and (clause := prefix_clause(project_prefix)) is not None:
        queries = [f"+{clause} +({query})" for query in queries]
    if kinds is not None:
        queries = [f"+({kind_clause(kinds)}) +({query})" for query in queries]
    return queries


#: Lucene refuses a query of more than this many leaf clauses (IndexSearcher.maxClauseCount).
MAX_CLAUSES = 1024


def scored_query(groups: list[Group], project_id: str | None, kinds: list[str] | None,
                 project_prefix: str | None = None) -> str | None:
    """ONE Lucene query finding exactly the capsules that cover at least one group, scored by coverage.

    Its score is groups covered * whole_weight + caller tokens covered (the pack's `rank_query` over
    the groups' own token sets, whose clauses score constants), so the statement ranks without
    reading a row's stored tokens. Matching is a required clause at weight 0 (some group's tokens
    all held), as are the fences and kinds of `lucene_queries`. None when a group has an alias (a
    group is then covered by ANY of its token sets, which a sum of clause scores cannot express),
    when `rank_query` cannot score exactly, or past Lucene's clause limit: the statement then counts
    coverage from the stored tokens.
    """
    if not groups or any(group.aliases for group in groups):
        return None
    own = [sorted(group.own) for group in groups]
    caller = sorted(frozenset().union(*(group.own for group in groups)))
    ranked = rank_query(own, caller)
    if ranked is None or 2 * sum(map(len, own)) + len(caller) + 1 + len(kinds or ()) > MAX_CLAUSES:
        return None
    match = " ".join("(" + " ".join("+tokens:" + _quoted(t) for t in tokens) + ")" for tokens in own)
    required = [f"+({match})^0"]
    if project_id is not None:
        required.append(f"+project_id:{_quoted(project_id)}^0")
    elif project_prefix is not None and (clause := prefix_clause(project_prefix)) is not None:
        required.append(f"+{clause}^0")
    if kinds is not None:
        required.append(f"+({kind_clause(kinds)})^0")
    return " ".join(required) + " " + ranked


def statement_parameters(request: RetrieveInput, groups: list[Group], now: datetime) -> dict[str, Any]:
    alternatives = [{"group": index, "tokens": sorted(tokens)}
                    for index, group in enumerate(groups) for tokens in group.token_sets]
    kinds = sorted(set(request.kinds)) if request.kinds is not None else None
    caller = sorted(frozenset().union(*(g.own for g in groups)))
    every = sorted(frozenset().union(*(tokens for g in groups for tokens in g.token_sets)))
    scored = scored_query(groups, request.project_id, kinds, request.project_prefix)
    return {
        "now": now, "limit": request.limit, "kinds": kinds,
        # One way to the candidates per request: the scored query, else the alternatives' queries.
        "query": scored, "weight": whole_weight(caller),
        "queries": [] if scored is not None else lucene_queries([a["tokens"] for a in alternatives],
                                                                request.project_id, kinds, request.project_prefix),
        "alternatives": alternatives, "caller_tokens": caller, "all_tokens": every,
        "project_id": request.project_id, "project_prefix": request.project_prefix,
        "probe_ids": sorted({term for term in request.terms if _PROBE.fullmatch(term)}),
    }


def _match(row: Any, groups: list[Group]) -> Match:
    matched, groups_covered, tokens_covered = covers(groups, frozenset(row["hit"]))
    candidate = Candidate(id=row["id"], project_id=row["project_id"], headline=row["headline"],
                          content=row["content"], updated_at=_EPOCH + timedelta(microseconds=row["updated_us"]),
                          tier=row["tier"], superseded=False)
    return Match(candidate, row["kind"], tuple(matched), groups_covered, tokens_covered)


def _read(tx: ManagedTransaction, request: RetrieveInput, now: datetime) -> RetrieveFound:
    pairs = read_pairs(tx, enclosing_scopes(request.project_id, request.project_prefix))
    groups = stored_groups(build_groups(request.terms, pairs))
    params = statement_parameters(request, groups, now)
    if not params["alternatives"] and not params["probe_ids"]:
        return RetrieveFound(head=[], results_total=0, excluded={})
    row = run(tx, "retrieve/matches", **params)[0]
    excluded = {reason: row[reason] for reason in ("superseded", "expired", "archived", "tombstoned") if row[reason]}
    return RetrieveFound(head=[_match(r, groups) for r in row["head"]], results_total=row["results_total"],
                         excluded=excluded)


def retrieve(db: Database, request: RetrieveInput, now: datetime) -> dict[str, Any]:
    """SPEC §8: what the store knows about the request's terms, at the request clock `now`."""
    return assemble_retrieve(db.read(lambda tx: _read(tx, request, now)), core_request(request), now)
