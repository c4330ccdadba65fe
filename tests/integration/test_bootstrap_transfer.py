"""The read side sends Python only what a pack can show, with exact totals (schema v2: ranked in Neo4j).

`read_inputs` is the boundary between Neo4j and the pure core; these tests pin its leanness,
which the pack-level tests cannot see (the pack looks the same either way).
"""

from __future__ import annotations

from graphsvc.core.pack import constraint_rows_needed
from graphsvc.store.bootstrap import read_inputs
from graphsvc.store.db import run
from graphsvc.models import BootstrapRequest

from .bootstrap_support import NOW, Store


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
    small = read_inputs(db, BootstrapRequest(token_budget=40), NOW)
    assert len(small.constraints) == constraint_rows_needed(40) == 2 + 40 * 4 // 53 and small.constraints_total == 60
    assert len(read_inputs(db, BootstrapRequest(token_budget=1500), NOW).constraints) == 60


def sections_row(db):
    return db.read(lambda tx: run(tx, "bootstrap/sections_store", now=NOW, tokens=[], term_sets=[], token_queries=[], projects_per_query=256,
                                  rank_query=None, whole_weight=1, at_least=[], top_ready=11,
                                  top_section=10, top_constraints=10, project_id=None, project_prefix=None))[0]


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
