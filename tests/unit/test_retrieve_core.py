"""graphsvc.core.retrieve and graphsvc.core.digest on plain data: groups, matching, eligibility, budget."""

from __future__ import annotations

import math
from datetime import datetime, timedelta, timezone

from graphsvc.core.candidates import Candidate
from graphsvc.core.canonical import canonical_json
from graphsvc.core.digest import DigestParts, assemble_digest
from graphsvc.core.retrieve import (
    Match, RetrieveFound, RetrieveRequest, alias_key, assemble_retrieve, build_groups, covers, exclusion_reason,
)

NOW = datetime(2026, 12, 1, tzinfo=timezone.utc)


def test_alias_key_folds_case_accents_and_spacing_but_keeps_order():
    assert alias_key("  Café  DB ") == "cafe db"
    assert alias_key("db café") == "db cafe"


def test_groups_take_aliases_both_ways_one_hop_and_drop_repeats_and_empty_terms():
    pairs = [("postgres", "pg"), ("postgres", "psql"), ("pg", "pgbouncer")]
    groups = build_groups(["PG", "pg", "--", "postgres", "mysql"], pairs)
    assert [g.term for g in groups] == ["PG", "postgres", "mysql"]
    assert groups[0].aliases == (frozenset({"pgbouncer"}), frozenset({"postgres"}))  # not psql: two hops
    assert set(groups[1].aliases) == {frozenset({"pg"}), frozenset({"psql"})}
    assert groups[2].aliases == ()


def test_covers_names_terms_in_request_order_and_marks_alias_only_matches():
    groups = build_groups(["postgres", "connection pool", "redis"], [("postgres", "pg")])
    matched, covered, tokens = covers(groups, frozenset({"pg", "connection", "pool", "other"}))
    assert matched == ["alias:postgres", "connection pool"] and covered == 2
    assert tokens == 2  # the caller's own tokens only: connection, pool (not the alias pg)
    assert covers(groups, frozenset({"postgres", "pg"}))[0] == ["postgres"]  # its own tokens win the attribution


def test_exclusion_reasons_are_checked_in_order():
    past = NOW - timedelta(seconds=1)
    assert exclusion_reason(True, past, "archived", NOW) == "superseded"
    assert exclusion_reason(False, NOW, "archived", NOW) == "expired"  # valid_to <= now
    assert exclusion_reason(False, NOW + timedelta(seconds=1), "archived", NOW) == "archived"
    assert exclusion_reason(False, None, "stale", NOW) is None


def _match(n: int, groups: int, tokens: int, age_minutes: int, text: str = "") -> Match:
    candidate = Candidate(id=f"cap-{n}", project_id="p", headline=f"row {n}", content=f"row {n} {text}",
                          updated_at=NOW - timedelta(minutes=age_minutes), tier="active", superseded=False)
    return Match(candidate, "fact", ("t",) * groups, groups, tokens)


def request(budget: int, limit: int = 10) -> RetrieveRequest:
    return RetrieveRequest(terms=("t",), project_id=None, project_prefix=None, kinds=None, limit=limit,
                           token_budget=budget)


def test_rows_rank_by_groups_tokens_decay_then_id_and_respect_the_limit():
    head = [_match(9, 1, 1, 0), _match(2, 2, 1, 50), _match(3, 1, 2, 90), _match(10, 1, 1, 0), _match(4, 1, 1, -5)]
    answer = assemble_retrieve(RetrieveFound(head, 7, {}), request(10_000, limit=4), NOW)
    assert [row["id"] for row in answer["results"]] == ["cap-2", "cap-3", "cap-4", "cap-9"]  # future = fresh, then id
    assert answer["results_total"] == 7 and answer["handles"] == ["cap-2", "cap-3", "cap-4", "cap-9"]


def test_outcomes_and_the_whole_body_budget():
    assert assemble_retrieve(RetrieveFound([], 0, {}), request(1500), NOW)["outcome"] == "abstain"
    missing = assemble_retrieve(RetrieveFound([], 0, {"expired": 2, "superseded": 1}), request(1500), NOW)
    assert missing["outcome"] == "missing_evidence" and list(missing["excluded"]) == ["superseded", "expired"]
    head = [_match(n, 1, 1, n, "x" * 30 * n) for n in range(1, 9)]
    full = assemble_retrieve(RetrieveFound(head, 8, {}), request(100_000), NOW)
    floor = full["budget"]["floor_tokens"]
    for budget in range(0, full["budget"]["used_tokens"] + 2, 7):
        answer = assemble_retrieve(RetrieveFound(head, 8, {}), request(budget), NOW)
        assert answer["budget"]["used_tokens"] == math.ceil(len(canonical_json(answer)) / 4)
        kept = len(answer.get("results", []))
        assert answer["budget"]["trimmed_by_budget"] == 8 - kept
        if budget == 0:
            assert kept == 0
        elif budget < floor:
            assert kept == 1
        else:
            assert answer["budget"]["used_tokens"] <= budget
            bigger = assemble_retrieve(RetrieveFound(head, 8, {}), request(budget), NOW)
            assert bigger == answer  # deterministic


def test_digest_budget_keeps_the_floor_and_fills_ready_blocked_newest_in_order():
    ready_rows = [{"headline": f"ready {n}", "id": f"cap-{n}", "project_id": "p"} for n in range(2, 6)]
    parts = DigestParts(
        handoff={"id": "cap-1", "headline": "h", "content": "state", "project_id": "p", "updated_at": "x"},
        counts={"task": {"live": 5, "superseded": 0, "expired": 0, "tombstoned": 0}},
        ready_head={"next_action": {"headline": "first", "id": "cap-9", "project_id": "p"}, "state": "next_action"},
        ready_rows=ready_rows, ready_total=5,
        blocked=[{"blockers": 2, "headline": "b", "id": "cap-7", "project_id": "p"}], blocked_total=1,
        newest=[{"headline": "n", "id": "cap-8", "kind": "task", "project_id": "p", "updated_at": "x"}])
    full = assemble_digest(parts, "p", None, 100_000, NOW)
    assert list(full) == ["advisory", "notice", "as_of", "scope", "handoff", "counts", "ready", "ready_total",
                          "blocked", "blocked_total", "newest", "handles", "budget"]
    assert full["handles"] == ["cap-1", "cap-9", "cap-2", "cap-3", "cap-4", "cap-5", "cap-7", "cap-8"]
    floor = full["budget"]["floor_tokens"]
    at_floor = assemble_digest(parts, "p", None, floor, NOW)
    assert "ready" not in at_floor["ready"] and at_floor["handoff"] == parts.handoff
    assert at_floor["budget"]["used_tokens"] <= floor and at_floor["budget"]["trimmed_by_budget"] == 6
    empty = assemble_digest(parts, "p", None, 0, NOW)
    assert "ready" not in empty and "handoff" not in empty and empty["counts"] == parts.counts
