"""The read side sends Python only what a pack can show, with exact totals (schema v2: ranked in Neo4j).

`read_inputs` is the boundary between Neo4j and the pure core; these tests pin its leanness,
which the pack-level tests cannot see (the pack looks the same either way).
"""

from __future__ import annotations

from graphsvc.core.pack import constraint_row_floor, constraint_rows_needed
from graphsvc.store.bootstrap import read_inputs, statement_parameters
from graphsvc.store.db import run
from graphsvc.models import BootstrapRequest

from .bootstrap_support import NOW, Store
from .oracle import oracle_pack


def test_without_terms_only_the_rows_a_pack_can_show_travel(db):
    s = Store(db)
    for n in range(25):
        s.put("decision", f"Decision {n}", age_days=n)
        s.put("failure_pattern", f"Trap {n}", age_days=n)
        s.put("task", f"Task {n}", age_days=n)
        s.put("constraint", f"Constraint {n}", age_days=n)
    inputs = read_inputs(db, BootstrapRequest(), NOW)
    assert (len(inputs.decisions), len(inputs.traps), len(inputs.ready), len(inputs.constraints)) == (10, 10, 11, 25)
    assert (inputs.decisions_total, inputs.traps_total, inputs.ready_total, inputs.constraints_total) == (25, 25, 25, 25)
    assert inputs.cycle is None


def test_with_terms_the_section_is_ranked_in_neo4j_and_only_its_cap_travels(db):
    s = Store(db)
    for n in range(25):
        s.put("decision", f"Decision {n}", age_days=n)
    deep_ascii = s.put("decision", "About the PARSER", age_days=100)
    deep_accent = s.put("decision", "Le CAFÉ parser", age_days=101)
    inputs = read_inputs(db, BootstrapRequest(terms=["parser", "cafe", "zzz"]), NOW)
    sent = [c.id for c in inputs.decisions]
    # Coverage first (the accented capsule covers two tokens once folded like Python folds), then decay.
    assert len(sent) == 10 and sent[:2] == [deep_accent, deep_ascii]
    assert inputs.decisions_total == 27
    assert len(read_inputs(db, BootstrapRequest(terms=["zzz"]), NOW).decisions) == 10


def test_constraints_travel_only_as_far_as_the_budget_could_hold_them(db):
    s = Store(db)
    for n in range(60):
        s.put("constraint", f"Constraint {n}", age_days=n)
    every = read_inputs(db, BootstrapRequest(token_budget=1500), NOW).constraints
    assert len(every) == 60
    # 40 tokens are 160 characters: after the first row (the floor), `Constraint 1` and `Constraint 2`
    # could fit at their least cost (43 + 2 * 5 + 12 + 4 = 69 characters each, 138 together; a third
    # makes 207), then one more: 4 rows, where the flat 53-character bound shipped 5.
    assert constraint_row_floor(every[1]) == constraint_row_floor(every[2]) == 69
    small = read_inputs(db, BootstrapRequest(token_budget=40), NOW)
    assert small.constraints == every[:4] and small.constraints_total == 60
    assert constraint_rows_needed(40) == 5
    assert read_inputs(db, BootstrapRequest(token_budget=0), NOW).constraints == every[:2]


#: Headlines whose JSON is longer than their characters (escapes, control characters) or whose
#: characters are not one UTF-16 unit each: the least cost must never exceed what a row adds.
ODD_HEADLINES = ["plain", 'say "no"', "back\\slash", "tab\there", "naïve café", "emoji 😀😀😀 here", "𝔘𝔫𝔦𝔠𝔬𝔡𝔢", "x"]


def test_trimmed_constraints_never_change_a_pack(db):
    # Every budget from nothing to all: the pack from the trimmed rows equals the v1 read's, which
    # ships every constraint.
    s = Store(db)
    for n in range(40):
        s.put("constraint", f"{ODD_HEADLINES[n % len(ODD_HEADLINES)]} {n}", age_days=n / 3,
              project_id=["nott", "nott/é", "nott/😀"][n % 3])
    for budget in range(0, 700, 9):
        request = {"token_budget": budget}
        assert s.pack(**request) == oracle_pack(db, request, NOW), budget


def sections_row(db):
    return db.read(lambda tx: run(tx, "bootstrap/head", **statement_parameters(BootstrapRequest(), NOW)))[0]


def test_no_edge_travels_without_a_live_edge_that_closed_a_loop(db):
    s = Store(db)
    first = s.put("task", "first")
    second = s.put("task", "second", blocked_by=[first])  # old -> new: in order
    third = s.put("task", "third", blocked_by=[second])
    fourth = s.put("task", "fourth", blocks=[first])  # new -> old: reordered, not marked
    row = sections_row(db)
    assert (row["loop_edges"], row["live_blocked_by"]) == (0, [])
    s.block(third, first)  # closes first -> second -> third -> first: marked, so the live edges travel
    row = sections_row(db)
    assert row["loop_edges"] == 1
    assert sorted((target, sorted(sources)) for target, sources in row["live_blocked_by"]) == [
        (1, [3, 4]), (2, [1]), (3, [2])]
    assert read_inputs(db, BootstrapRequest(), NOW).cycle == [first, second, third]
