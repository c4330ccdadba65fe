"""Claims in the pure pack (SPEC §12): the caller's held work first and marked, others' counted apart,
and a pack without leases exactly as before. Plain data, no Neo4j."""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime, timedelta, timezone

from hypothesis import given, settings
from hypothesis import strategies as st

from graphsvc.core.budget import token_cost
from graphsvc.core.candidates import Candidate
from graphsvc.core.canonical import canonical_json
from graphsvc.core.pack import PackInputs, PackRequest, assemble_pack, ready_order, ready_section

NOW = datetime(2026, 12, 2, 14, 0, tzinfo=timezone.utc)
UNTIL = NOW + timedelta(minutes=15)


def task(number: int, headline: str = "", days_old: float = 0.0, held: bool = False) -> Candidate:
    headline = headline or f"task {number}"
    return Candidate(id=f"cap-{number}", project_id="p", headline=headline, content=headline,
                     updated_at=NOW - timedelta(days=days_old), tier="active", superseded=False,
                     lease_until=UNTIL if held else None)


def inputs(ready: list[Candidate], held: list[Candidate] = (), others: int = 0, cycle=None) -> PackInputs:
    return PackInputs(constraints=[], constraints_total=0, ready=ready, ready_total=len(ready) + len(held),
                      cycle=cycle, decisions=[], decisions_total=0, traps=[], traps_total=0, held=held,
                      held_by_others=others)


def request(budget: int = 1500, terms: tuple[str, ...] = ()) -> PackRequest:
    return PackRequest(terms=terms, project_id="p", project_prefix=None, token_budget=budget)


def test_own_held_work_comes_first_marked_and_others_are_counted():
    pack = assemble_pack(inputs([task(1), task(2, days_old=1)], held=[task(9, days_old=3, held=True)], others=2),
                         request(), NOW)
    assert pack["ready"] == {
        "held_by_others": 2, "state": "next_action",
        "next_action": {"headline": "task 9", "held": {"lease_until": "2026-12-02T14:15:00.000Z"}, "id": "cap-9",
                        "project_id": "p"},
        "ready": [{"headline": "task 1", "id": "cap-1", "project_id": "p"},
                  {"headline": "task 2", "id": "cap-2", "project_id": "p"}]}
    assert pack["ready_total"] == 3 and pack["handles"] == ["cap-9", "cap-1", "cap-2"]
    assert ready_order(inputs([task(1)], held=[task(9, held=True)]), (), NOW) == ["cap-9", "cap-1"]


def test_held_rows_rank_among_themselves_by_the_usual_key():
    held = [task(5, "old alpha", days_old=2, held=True), task(6, "new beta", held=True)]
    assert ready_order(inputs([task(1, "alpha")], held=held), ("alpha",), NOW) == ["cap-5", "cap-6", "cap-1"]
    assert ready_order(inputs([task(1, "alpha")], held=held), (), NOW) == ["cap-6", "cap-5", "cap-1"]


def test_everything_held_by_others_is_nothing_ready_said_so():
    section, rows, total = ready_section(inputs([], others=4), NOW)
    assert section["state"] == "nothing_ready" and section["held_by_others"] == 4 and "another agent" in section["message"]
    assert ready_order(inputs([], others=4), (), NOW) == [] and total == 0


def test_a_cycle_fails_closed_whatever_is_held():
    pack = assemble_pack(inputs([task(1)], held=[task(2, held=True)], others=1, cycle=["cap-3", "cap-4"]), request(), NOW)
    assert pack["ready"]["state"] == "cycle" and "next_action" not in pack["ready"]
    assert pack["ready"]["held_by_others"] == 1
    assert ready_order(inputs([task(1)], held=[task(2, held=True)], cycle=["cap-3", "cap-4"]), (), NOW) == []


@settings(max_examples=60, deadline=None)
@given(ready=st.integers(0, 14), held=st.integers(0, 4), others=st.integers(0, 3), budget=st.integers(0, 400))
def test_no_lease_changes_nothing_and_the_budget_holds_with_leases(ready, held, others, budget):
    plain = [task(n, days_old=n) for n in range(1, ready + 1)]
    before = assemble_pack(inputs(plain), request(budget), NOW)
    assert canonical_json(assemble_pack(inputs(plain, held=[], others=0), request(budget), NOW)) == canonical_json(before)
    leased = assemble_pack(inputs(plain, held=[task(100 + n, held=True) for n in range(held)], others=others),
                           request(budget), NOW)
    assert leased["budget"]["used_tokens"] == token_cost(leased)
    if budget >= leased["budget"]["floor_tokens"]:
        assert leased["budget"]["used_tokens"] <= budget
    if budget and held:
        assert leased["ready"]["next_action"]["held"] == {"lease_until": "2026-12-02T14:15:00.000Z"}
    assert ("held_by_others" in leased.get("ready", {})) == bool(budget and others)


def test_a_candidate_without_a_lease_renders_as_before():
    assert replace(task(1), lease_until=None) == task(1)
