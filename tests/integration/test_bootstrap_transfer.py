"""The read side sends Python only what a pack can show (plus possible term hits), with exact totals.

`read_inputs` is the boundary between Neo4j and the pure core; these tests pin its leanness,
which the pack-level tests cannot see (the pack looks the same either way).
"""

from __future__ import annotations

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


def test_with_terms_only_possible_hits_travel_beyond_the_prefix(db):
    s = Store(db)
    for n in range(25):
        s.put("decision", f"Decision {n}", age_days=n)
    deep_ascii = s.put("decision", "About the PARSER", age_days=100)
    deep_accent = s.put("decision", "Le café", age_days=101)
    inputs = read_inputs(db, BootstrapRequest(terms=["parser", "zzz"]), NOW)
    sent = [c.id for c in inputs.decisions]
    assert len(sent) == 12 and sent[-2:] == [deep_ascii, deep_accent]  # the token hit, and the non-ASCII text
    assert inputs.decisions_total == 27
    assert len(read_inputs(db, BootstrapRequest(terms=["zzz"]), NOW).decisions) == 11  # only the non-ASCII one


def sections_row(db):
    return db.read(lambda tx: run(tx, "bootstrap/sections", now=NOW, tokens=[], top_ready=11, top_section=10,
                                  project_id=None, project_prefix=None))[0]


def test_no_edge_travels_without_a_back_edge(db):
    s = Store(db)
    first = s.put("task", "first")
    second = s.put("task", "second", blocked_by=[first])  # old -> new: not a back edge
    third = s.put("task", "third", blocked_by=[second])
    row = sections_row(db)
    assert (row["back_edges"], row["live_blocked_by"]) == (0, [])
    s.block(third, first)  # new -> old: a back edge, so the live edges travel (as adjacency lists)
    row = sections_row(db)
    assert row["back_edges"] == 1
    assert sorted((target, sorted(sources)) for target, sources in row["live_blocked_by"]) == [
        (1, [3]), (2, [1]), (3, [2])]
    assert read_inputs(db, BootstrapRequest(), NOW).cycle == [first, second, third]
