"""memory_bootstrap sections on a real Neo4j: membership, exact totals, caps, order, terms, budget.

Each test states one sentence of the seed (SPEC §3-§4) and builds the smallest store that
would break it if the rule were wrong.
"""

from __future__ import annotations

import math

from datetime import timedelta

import pytest

from graphsvc.core.canonical import canonical_json

from .bootstrap_support import NOW, Store, ids, ready_ids


@pytest.fixture
def s(db):
    return Store(db)


# ------------------------------------------------------------------ constraints


def test_constraints_are_never_count_capped(s):
    made = [s.put("constraint", f"Rule number {n}", age_days=n) for n in range(1, 15)]
    pack = s.pack()
    assert ids(pack["constraints"]) == made  # all 14, newest first
    assert pack["constraints_total"] == 14
    assert pack["budget"]["trimmed_by_budget"] == 0


def test_only_the_budget_trims_constraints_and_the_total_says_so(s):
    made = [s.put("constraint", f"Rule number {n} " + "detail " * 20, age_days=n) for n in range(1, 15)]
    pack = s.pack(token_budget=400)  # covers the floors (envelope, first rule, nothing-ready), not every rule
    kept = ids(pack["constraints"])
    assert 1 < len(kept) < 14 and kept == made[: len(kept)]
    assert pack["constraints_total"] == 14
    assert pack["budget"]["trimmed_by_budget"] == 14 - len(kept)
    assert pack["budget"]["floor_tokens"] <= 400
    assert pack["budget"]["used_tokens"] <= 400


def test_constraint_membership(s):
    keep = s.put("constraint", "active and valid")
    keep_future = s.put("constraint", "expires tomorrow", valid_to=(NOW + timedelta(days=1)).isoformat())
    s.put("constraint", "archived", tier="archived")
    s.put("constraint", "stale", tier="stale")
    s.put("constraint", "expired yesterday", valid_to=(NOW - timedelta(days=1)).isoformat())
    s.put("constraint", "expires exactly now", valid_to=NOW.isoformat())
    old = s.put("constraint", "superseded")
    newer = s.put("constraint", "the replacement", supersedes=[old])
    gone = s.put("constraint", "tombstoned")
    s.tombstone(gone)
    undone = s.put("constraint", "superseded only by a tombstoned capsule")
    ghost = s.put("constraint", "tombstoned superseder", supersedes=[undone])
    s.tombstone(ghost)
    pack = s.pack(token_budget=100_000)
    assert set(ids(pack["constraints"])) == {keep, keep_future, newer, undone}
    assert pack["constraints_total"] == 4


# ------------------------------------------------------------------ decisions and traps


def test_decisions_cap_at_10_with_an_exact_total(s):
    made = [s.put("decision", f"Decision {n}", age_days=n) for n in range(1, 14)]
    pack = s.pack(token_budget=100_000)
    assert ids(pack["decisions"]) == made[:10]
    assert pack["decisions_total"] == 13


def test_decision_membership(s):
    keep = s.put("decision", "valid")
    keep_stale = s.put("decision", "stale tier is still a valid decision", tier="stale")
    s.put("decision", "expired", valid_to=(NOW - timedelta(seconds=1)).isoformat())
    old = s.put("decision", "superseded")
    newer = s.put("decision", "replacement", supersedes=[old])
    gone = s.put("decision", "tombstoned")
    s.tombstone(gone)
    undone = s.put("decision", "superseded only by a tombstoned capsule")
    ghost = s.put("decision", "tombstoned superseder", supersedes=[undone])
    s.tombstone(ghost)
    pack = s.pack(token_budget=100_000)
    assert set(ids(pack["decisions"])) == {keep, keep_stale, newer, undone}
    assert pack["decisions_total"] == 4


def test_traps_keep_stale_and_superseded_rows_marked_and_cap_at_10(s):
    plain = [s.put("failure_pattern", f"Trap {n}", age_days=20 + n) for n in range(1, 9)]
    stale = s.put("failure_pattern", "Stale trap", tier="stale", age_days=1)
    archived = s.put("failure_pattern", "Archived trap", tier="archived", age_days=2)
    old = s.put("failure_pattern", "Superseded trap", age_days=3)
    s.put("decision", "what replaced it", supersedes=[old], age_days=3)
    undone = s.put("failure_pattern", "Superseded by a tombstoned capsule", age_days=4)
    ghost = s.put("fact", "tombstoned superseder", supersedes=[undone])
    s.tombstone(ghost)
    gone = s.put("failure_pattern", "Tombstoned trap", age_days=0.5)
    s.tombstone(gone)
    pack = s.pack(token_budget=100_000)
    rows = {row["id"]: row for row in pack["traps"]}
    assert ids(pack["traps"]) == [stale, archived, old, undone] + plain[:6]
    assert pack["traps_total"] == 12
    assert (rows[stale]["tier"], rows[stale]["superseded"]) == ("stale", False)
    assert (rows[archived]["tier"], rows[archived]["superseded"]) == ("archived", False)
    assert (rows[old]["tier"], rows[old]["superseded"]) == ("active", True)
    assert rows[undone]["superseded"] is False
    assert gone not in rows


# ------------------------------------------------------------------ ready (SPEC §3)


def test_ready_caps_at_10_after_the_next_action_with_an_exact_total(s):
    made = [s.put("task", f"Task {n}", age_days=n) for n in range(1, 14)]
    pack = s.pack(token_budget=100_000)
    assert pack["ready"]["state"] == "next_action"
    assert pack["ready"]["next_action"]["id"] == made[0]
    assert pack["ready"]["next_action"]["headline"] == "Task 1"
    assert ids(pack["ready"]["ready"]) == made[1:11]
    assert pack["ready_total"] == 13


def test_ready_membership(s):
    free = s.put("task", "free task")
    epic = s.put("epic", "free epic")
    done = s.put("task", "done", status="done")
    gone = s.put("task", "tombstoned")
    s.tombstone(gone)
    old = s.put("task", "superseded")
    s.put("task", "replacement", supersedes=[old], status="done")
    expired = s.put("task", "expired", valid_to=(NOW - timedelta(hours=1)).isoformat())
    open_blocker = s.put("task", "open blocker", status="done")
    s.at(NOW).update(open_blocker, {"status": "open"})
    blocked = s.put("task", "blocked by an open task", blocked_by=[open_blocker])
    after_done = s.put("task", "blocked only by a done task", blocked_by=[done])
    after_gone = s.put("task", "blocked only by a tombstoned task", blocked_by=[gone])
    after_old = s.put("task", "blocked only by a superseded task", blocked_by=[old])
    stale_blocker = s.put("task", "expired but open blocker", valid_to=(NOW - timedelta(days=2)).isoformat())
    still_blocked = s.put("task", "blocked by an expired open task", blocked_by=[stale_blocker])
    undone = s.put("task", "superseded only by a tombstoned capsule")
    ghost = s.put("task", "tombstoned superseder", supersedes=[undone], status="done")
    s.tombstone(ghost)
    pack = s.pack(token_budget=100_000)
    expected = {free, epic, open_blocker, after_done, after_gone, after_old, undone}
    assert set(ready_ids(pack)) == expected
    assert pack["ready_total"] == len(expected)
    assert not {done, gone, old, expired, blocked, still_blocked} & set(ready_ids(pack))


def test_marking_the_blocker_done_makes_the_blocked_task_ready(s):
    first = s.put("task", "first", age_days=5)
    second = s.put("task", "second", blocked_by=[first], age_days=1)
    assert ready_ids(s.pack()) == [first]
    s.done(first)
    assert ready_ids(s.pack()) == [second]


def test_nothing_ready_is_said_explicitly(s):
    s.put("task", "done already", status="done")
    blocker = s.put("task", "waiting", project_id="elsewhere")
    s.put("task", "blocked", blocked_by=[blocker])
    pack = s.pack(project_id="nott")
    ready = pack["ready"]
    assert ready["state"] == "nothing_ready"
    assert "Nothing is ready" in ready["message"]
    assert "next_action" not in ready and "ready" not in ready and "cycle" not in ready
    assert pack["ready_total"] == 0


def test_an_empty_store_still_has_a_ready_section(s):
    pack = s.pack()
    assert pack["ready"]["state"] == "nothing_ready"
    assert [key for key in pack if key in ("constraints", "decisions", "traps", "handles")] == []


# ------------------------------------------------------------------ order, terms


def test_ties_in_decay_break_on_the_numeric_id(s):
    made = s.many([{"project_id": "nott", "kind": "decision", "content": f"d{n}"} for n in range(12)])
    assert made[9] == "cap-10"
    assert ids(s.pack(token_budget=100_000)["decisions"]) == made[:10]  # cap-9 before cap-10, never cap-11


def test_a_capsule_updated_after_the_request_clock_counts_as_fresh_not_fresher(s):
    at_now = s.many([{"project_id": "nott", "kind": "decision", "content": f"d{n}"} for n in range(10)], age_days=0)
    future = s.many([{"project_id": "nott", "kind": "decision", "content": "from the future"}], age_days=-1)
    pack = s.pack(token_budget=100_000)
    assert ids(pack["decisions"]) == at_now  # all have decay 1, so ids decide; the future one is 11th
    assert future[0] not in ids(pack["decisions"])


def test_terms_rerank_a_row_from_beyond_the_cap_but_never_filter(s):
    made = [s.put("decision", f"Decision {n} about storage", age_days=n) for n in range(1, 13)]
    oldest = s.put("decision", "Choose the parser generator", age_days=40)
    plain = s.pack(token_budget=100_000)
    assert oldest not in ids(plain["decisions"])
    ranked = s.pack(token_budget=100_000, terms=["parser"])
    assert ids(ranked["decisions"]) == [oldest] + made[:9]
    assert ranked["decisions_total"] == plain["decisions_total"] == 13


def test_term_matching_folds_case_and_diacritics_even_past_the_cap(s):
    made = [s.put("decision", f"Decision {n}", age_days=n) for n in range(1, 13)]
    oldest = s.put("decision", "Le CAFÉ reste ouvert", age_days=40)
    assert ids(s.pack(token_budget=100_000, terms=["cafe"])["decisions"])[0] == oldest
    assert ids(s.pack(token_budget=100_000, terms=["Café"])["decisions"])[0] == oldest
    assert ids(s.pack(token_budget=100_000, terms=["caf"])["decisions"]) == made[:10]  # raw tokens: no stemming


def test_terms_rerank_every_section(s):
    rules = [s.put("constraint", f"Rule {n}", age_days=n) for n in range(1, 4)]
    rule = s.put("constraint", "Never touch the billing schema", age_days=30)
    task = s.put("task", "Migrate billing", age_days=30)
    other_tasks = [s.put("task", f"Task {n}", age_days=n) for n in range(1, 13)]
    trap = s.put("failure_pattern", "Billing cron double-charges", age_days=30)
    traps = [s.put("failure_pattern", f"Trap {n}", age_days=n) for n in range(1, 12)]
    pack = s.pack(token_budget=100_000, terms=["billing"])
    assert ids(pack["constraints"]) == [rule] + rules
    assert pack["ready"]["next_action"]["id"] == task
    assert ids(pack["ready"]["ready"]) == other_tasks[:10]
    assert ids(pack["traps"]) == [trap] + traps[:9]
    assert (pack["ready_total"], pack["traps_total"], pack["constraints_total"]) == (13, 12, 4)


def test_more_covered_terms_rank_first(s):
    both = s.put("decision", "retry the flaky upload", age_days=9)
    one = s.put("decision", "the upload path", age_days=1)
    none = s.put("decision", "unrelated", age_days=0.5)
    assert ids(s.pack(terms=["flaky", "upload"])["decisions"]) == [both, one, none]


def test_a_term_that_matches_nothing_leaves_pure_decay_order(s):
    made = [s.put("decision", f"Decision {n}", age_days=n) for n in range(1, 13)]
    assert ids(s.pack(terms=["zzzz"])["decisions"]) == made[:10]


def test_query_looking_terms_and_content_are_only_data(s):
    evil = "'}) MATCH (n) DETACH DELETE n //"
    kept = s.put("constraint", evil)
    pack = s.pack(terms=[evil, '" OR 1=1 --'])
    assert ids(pack["constraints"]) == [kept]
    assert pack["constraints"][0]["headline"] == evil
    assert s.pack()["constraints_total"] == 1


# ------------------------------------------------------------------ budget and handles


def test_budget_zero_is_an_empty_pack(s):
    s.put("constraint", "rule")
    s.put("task", "task")
    s.put("decision", "decision")
    s.put("failure_pattern", "trap")
    pack = s.pack(token_budget=0)
    assert not {"constraints", "ready", "decisions", "traps", "handles"} & set(pack)
    # no section, but the envelope it does return is paid for, honestly
    assert pack["budget"]["used_tokens"] == math.ceil(len(canonical_json(pack)) / 4) > 0
    assert pack["budget"]["trimmed_by_budget"] == 4  # the rule, the next action, the decision, the trap
    assert pack["budget"]["token_budget"] == 0
    assert pack["advisory"] == "ADVISORY_NOT_AUTHORITY"


def test_every_budget_that_covers_the_floors_is_respected_and_keeps_a_prefix(s):
    for n in range(1, 6):
        s.put("constraint", f"Constraint {n} " + "words " * 10, age_days=n)
        s.put("decision", f"Decision {n} " + "words " * 10, age_days=n)
        s.put("failure_pattern", f"Trap {n} " + "words " * 10, age_days=n)
    for n in range(1, 5):
        s.put("task", f"Task {n} " + "words " * 10, age_days=n)
    def fill_order(pack):
        """Floors (first constraint, next action), then constraints, ready rows, decisions, traps."""
        constraints, ready = ids(pack.get("constraints")), ready_ids(pack)
        return constraints[:1] + ready[:1] + constraints[1:] + ready[1:] + ids(pack.get("decisions")) + ids(pack.get("traps"))

    full = s.pack(token_budget=100_000)
    order = fill_order(full)
    assert len(order) == 5 + 4 + 5 + 5
    floors = full["budget"]["floor_tokens"]
    for budget in range(floors, full["budget"]["used_tokens"] + 2, 7):
        pack = s.pack(token_budget=budget)
        assert pack["budget"]["used_tokens"] == math.ceil(len(canonical_json(pack)) / 4) <= budget
        kept = fill_order(pack)
        assert kept == order[: len(kept)]  # a priority prefix: nothing skips ahead
        assert pack["budget"]["trimmed_by_budget"] == len(order) - len(kept)


def test_the_floors_survive_a_budget_smaller_than_themselves(s):
    rule = s.put("constraint", "A long rule " + "words " * 50)
    task = s.put("task", "A long task " + "words " * 50)
    pack = s.pack(token_budget=5)
    assert ids(pack["constraints"]) == [rule]
    assert pack["ready"]["next_action"]["id"] == task
    assert pack["budget"]["used_tokens"] > 5  # the one sanctioned excess


def test_handles_are_every_surfaced_id_once_in_order_of_appearance(s):
    rule = s.put("constraint", "rule", age_days=1)
    task = s.put("task", "task", age_days=1)
    decision = s.put("decision", "decision", age_days=1)
    trap = s.put("failure_pattern", "trap", age_days=1)
    pack = s.pack()
    assert pack["handles"] == [rule, task, decision, trap]
    assert list(pack)[-2:] == ["handles", "budget"]
