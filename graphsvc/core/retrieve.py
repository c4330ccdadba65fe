"""memory_retrieve (SPEC §8): groups, matching, eligibility, ranking and the budgeted answer.

Pure: the store finds the raw matches (graphsvc.store.retrieve) and hands over their counts and
the ranked head; this module says what a group is, what a capsule covers, why a match is excluded,
how eligible matches order, and renders the answer under §4's whole-body budget with the same
envelope, row and budget code the pack uses (graphsvc.core.pack, graphsvc.core.budget).

Choices where SPEC §8 is silent (documented here and in docs/capsules.md):

* A group is one caller term (its distinct token set; a term repeated with the same tokens is one
  group, the first spelling names it; a term without any alphanumeric token is no group) plus the
  taught aliases of that token set in scope (§10: both directions, one hop).
* "Distinct term tokens covered" counts the tokens of the caller's own terms only, never an
  alias's: an alias widens what matches, the caller's words decide among equals.
* The tombstone probe: a term that is exactly `cap-<n>` (after nothing: no trimming, no case
  change) and names a tombstoned capsule in the fences and kinds counts as one raw match excluded
  as `tombstoned`.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from graphsvc.core.budget import longest_fitting_prefix, settle_self_count
from graphsvc.core.candidates import Candidate
from graphsvc.core.canonical import canonical_json
from graphsvc.core.pack import ADVISORY, NOTICE, as_of, excerpt, scope_of
from graphsvc.core.ranking import age_microseconds, id_number
from graphsvc.core.textmatch import tokenize
from graphsvc.core.timefmt import iso_utc

__all__ = [
    "ALIAS_MARK",
    "EXCLUSION_REASONS",
    "Group",
    "Match",
    "RetrieveFound",
    "RetrieveRequest",
    "alias_key",
    "assemble_retrieve",
    "build_groups",
    "covers",
    "exclusion_reason",
    "rank_key",
]

#: The order eligibility is checked in; the first failing rule names the reason. `tombstoned` is
#: only ever reached through the id probe (a tombstoned capsule's text never matches).
EXCLUSION_REASONS = ("superseded", "expired", "archived", "tombstoned")
ALIAS_MARK = "alias:"


def alias_key(text: str) -> str:
    """The folded form a term or alias is stored and compared by: its tokens, in order, space-joined.

    "Postgres DB" and "postgres  db" are one term; the order is kept so Browser shows what was taught.
    """
    return " ".join(tokenize(text))


@dataclass(frozen=True)
class Group:
    """One caller term and the token sets that satisfy it: its own, then its aliases (sorted)."""

    term: str
    own: frozenset[str]
    aliases: tuple[frozenset[str], ...]

    @property
    def token_sets(self) -> tuple[frozenset[str], ...]:
        return (self.own, *self.aliases)


def build_groups(terms: Sequence[str], pairs: Iterable[tuple[str, str]]) -> list[Group]:
    """The request's groups in request order. `pairs`: (term, alias) as taught, in scope.

    An alias works both ways and one hop only: a term's group holds the aliases taught for it and
    the terms it was taught as an alias of, never the aliases of those.
    """
    neighbours: dict[frozenset[str], set[frozenset[str]]] = {}
    for term, alias in pairs:
        left, right = frozenset(tokenize(term)), frozenset(tokenize(alias))
        if left and right and left != right:
            neighbours.setdefault(left, set()).add(right)
            neighbours.setdefault(right, set()).add(left)
    groups: list[Group] = []
    seen: set[frozenset[str]] = set()
    for term in terms:
        own = frozenset(tokenize(term))
        if not own or own in seen:
            continue
        seen.add(own)
        aliases = tuple(sorted(neighbours.get(own, ()), key=lambda tokens: sorted(tokens)))
        groups.append(Group(term, own, aliases))
    return groups


def covers(groups: Sequence[Group], tokens: frozenset[str]) -> tuple[list[str], int, int]:
    """What a capsule holding `tokens` covers: (matched_terms, groups covered, caller tokens covered).

    matched_terms is in request order, `alias:<term>` where only an alias of the term matched.
    """
    matched: list[str] = []
    for group in groups:
        if group.own <= tokens:
            matched.append(group.term)
        elif any(alias <= tokens for alias in group.aliases):
            matched.append(ALIAS_MARK + group.term)
    caller_tokens = frozenset().union(*(group.own for group in groups))
    return matched, len(matched), len(caller_tokens & tokens)


def exclusion_reason(superseded: bool, valid_to: datetime | None, tier: str, now: datetime) -> str | None:
    """The first eligibility rule a live (not tombstoned) match fails, or None when it is eligible."""
    if superseded:
        return "superseded"
    if valid_to is not None and valid_to <= now:
        return "expired"
    if tier == "archived":
        return "archived"
    return None


@dataclass(frozen=True)
class Match:
    """One eligible match as the store shipped it, with what it covers."""

    candidate: Candidate
    kind: str
    matched_terms: tuple[str, ...]
    groups_covered: int
    tokens_covered: int


def rank_key(match: Match, now: datetime) -> tuple[int, int, int, int]:
    """Groups covered desc, caller tokens covered desc, decay desc (exact age asc), numeric id asc."""
    c = match.candidate
    return (-match.groups_covered, -match.tokens_covered, age_microseconds(c.updated_at, now), id_number(c.id))


@dataclass(frozen=True)
class RetrieveRequest:
    """A validated memory_retrieve request (terms non-empty, 1 <= limit <= 50, token_budget >= 0)."""

    terms: tuple[str, ...]
    project_id: str | None
    project_prefix: str | None
    kinds: tuple[str, ...] | None
    limit: int
    token_budget: int


@dataclass(frozen=True)
class RetrieveFound:
    """What the store found: the eligible head (any order, at least the first `limit` by rank_key),
    the exact eligible count and the excluded counts per reason."""

    head: Sequence[Match]
    results_total: int
    excluded: dict[str, int]


def _row(match: Match) -> dict[str, Any]:
    c = match.candidate
    row: dict[str, Any] = {}
    text = excerpt(c.content, c.headline)
    if text:
        row["excerpt"] = text
    row.update(headline=c.headline, id=c.id, kind=match.kind, matched_terms=list(match.matched_terms),
               project_id=c.project_id, tier=c.tier, updated_at=iso_utc(c.updated_at))
    return row


def _outcome(found: RetrieveFound) -> str:
    if found.results_total:
        return "grounded"
    return "missing_evidence" if any(found.excluded.values()) else "abstain"


def _render(envelope: dict[str, Any], found: RetrieveFound, rows: list[dict[str, Any]],
            budget: dict[str, Any]) -> dict[str, Any]:
    body = dict(envelope)
    body["outcome"] = _outcome(found)
    if rows:
        body["results"] = rows
    body["results_total"] = found.results_total
    excluded = {reason: found.excluded[reason] for reason in EXCLUSION_REASONS if found.excluded.get(reason)}
    if excluded:
        body["excluded"] = excluded
    if rows:
        body["handles"] = [row["id"] for row in rows]
    body["budget"] = budget
    return body


def _settled(body: dict[str, Any]) -> dict[str, Any]:
    """Write the honest used_tokens into a body rendered with the placeholder 0 (one character)."""
    body["budget"]["used_tokens"] = settle_self_count(len(canonical_json(body)) - 1)
    return body


def assemble_retrieve(found: RetrieveFound, request: RetrieveRequest, now: datetime) -> dict[str, Any]:
    """The §8 answer: ranked rows under §4's whole-body budget, the first result being the floor.

    Top level in this order: advisory, notice, as_of, scope?, outcome, results?, results_total,
    excluded?, handles?, budget. token_budget 0 keeps no row (the outcome and counts still say
    what was found); otherwise the rows kept are the longest rank-order prefix whose whole body
    fits, the first one always (the sanctioned excess when it alone overshoots).
    """
    ranked = sorted(found.head, key=lambda match: rank_key(match, now))[:request.limit]
    rows = [_row(match) for match in ranked]
    envelope: dict[str, Any] = {"advisory": ADVISORY, "notice": NOTICE, "as_of": as_of(now)}
    scope = scope_of(request.project_id, request.project_prefix)
    if scope:
        envelope["scope"] = scope

    def budget_of(floor: int, token_budget: int, trimmed: int) -> dict[str, Any]:
        return {"floor_tokens": floor, "token_budget": token_budget, "trimmed_by_budget": trimmed, "used_tokens": 0}

    floor_rows = rows[:1]
    content_rows = rows[1:]
    probe = _render(envelope, found, floor_rows, budget_of(0, 0, len(content_rows)))
    floor = settle_self_count(len(canonical_json(probe)) - 3, occurrences=3)
    budget = request.token_budget
    if budget == 0:
        return _settled(_render(envelope, found, [], budget_of(floor, 0, len(rows))))

    measured: dict[int, dict[str, Any]] = {}

    def with_rows(kept: int) -> dict[str, Any]:
        if kept not in measured:
            measured[kept] = _settled(_render(envelope, found, floor_rows + content_rows[:kept],
                                              budget_of(floor, budget, len(content_rows) - kept)))
        return measured[kept]

    kept = longest_fitting_prefix(len(content_rows), lambda k: with_rows(k)["budget"]["used_tokens"] <= budget)
    return with_rows(kept)
