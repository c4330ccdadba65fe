"""A section whose live rows all fit its run is read without seeking its floor (`all_rows`).

graphsvc.store.bootstrap.section_runs marks a section `all_rows` when the head's total of its live
rows in the fence is no more than the run's `top`; the section statements then read every live row
from the oldest on instead of first finding the k-th freshest. Here: the marks follow the totals;
packs on either side of the boundary, with their rows tied at one instant, rank as the oracle does;
and a mark made from totals a concurrent write has since outgrown changes no row, only the cost.
"""

from __future__ import annotations

from typing import Any

import pytest

from graphsvc.models import BootstrapRequest
from graphsvc.store.bootstrap import (MAX_LIMIT, CAPPED_SECTIONS, pack_runs, pack_statements, section_runs,
                                     statement_parameters)
from graphsvc.store.db import run

from .bootstrap_support import NOW, Store, ids
from .oracle import oracle_pack

FENCES = [{}, {"project_id": "p"}, {"project_prefix": "p"}]
TOP_CAPPED = max(section["cap"] for section in CAPPED_SECTIONS)


def head_row(**totals: int) -> dict[str, Any]:
    row: dict[str, Any] = {"fence_projects": ["p"], "constraints_total": 0, "ready_total": 0,
                           "decisions_total": 0, "traps_total": 0}
    row.update({f"{name}_total": count for name, count in totals.items()})
    return row


def marks(runs: list[dict[str, Any]]) -> list[dict[str, bool]]:
    return [{section["name"]: section["all_rows"] for section in r["sections"]} for r in runs]


def test_a_section_is_read_whole_exactly_when_its_live_rows_fit_the_run():
    params = statement_parameters(BootstrapRequest(token_budget=400), NOW)
    top = params["top_constraints"]
    runs = section_runs(params, head_row(constraints=top, ready=TOP_CAPPED, decisions=TOP_CAPPED + 1, traps=0))
    assert [r["top"] for r in runs] == [top, TOP_CAPPED]
    assert marks(runs) == [{"constraints": True}, {"ready": True, "decisions": False, "traps": True}]
    assert marks(section_runs(params, head_row(constraints=top + 1)))[0] == {"constraints": False}


@pytest.mark.parametrize("fence", FENCES)
@pytest.mark.parametrize("extra", [-1, 0, 1, 2])
def test_ties_at_the_boundary_rank_as_the_oracle_on_either_side_of_it(db, fence, extra):
    # TOP_CAPPED + extra decisions at ONE instant (every one ties on freshness: seq decides), a few
    # fresher and older constraints: the run reads the decisions whole up to TOP_CAPPED of them,
    # through the floor past it, and the 10 shown are the first 10 stored either way.
    s = Store(db)
    tied = s.many([{"project_id": "p", "kind": "decision", "content": f"tied decision {n}"}
                   for n in range(TOP_CAPPED + extra)], age_days=2)
    s.many([{"project_id": "p", "kind": "constraint", "content": f"rule {n}"} for n in range(3)], age_days=1)
    s.many([{"project_id": "p/sub", "kind": "constraint", "content": f"old rule {n}"} for n in range(3)], age_days=9)
    for request in ({**fence}, {**fence, "terms": ["rule", "tied"]}, {**fence, "token_budget": 60}):
        pack = s.pack(**request)
        assert pack == oracle_pack(db, request, NOW), request
        if "token_budget" not in request:  # the default budget holds every row shown here
            assert ids(pack["decisions"]) == tied[:10], request


@pytest.mark.parametrize("fence", FENCES)
def test_marks_from_outgrown_totals_change_no_row(db, fence):
    s = Store(db)
    for age in (1, 2, 3):
        s.many([{"project_id": "p", "kind": kind, "content": f"{kind} {age} {n}"}
                for kind in ("constraint", "decision", "task", "failure_pattern") for n in range(6)], age_days=age)
    for budget in (60, 400, 100_000):
        request = BootstrapRequest(token_budget=budget, **fence)
        params = statement_parameters(request, NOW)
        head_name, sections_name = pack_statements(request.project_id, request.project_prefix)

        def sections(tx: Any, outgrown: bool) -> list[tuple[str, list[str]]]:
            head = dict(run(tx, head_name, **params)[0])
            if outgrown:  # totals read before 18 of each section were written: every section marked whole
                head.update({f"{name}_total": 0 for name in ("constraints", "ready", "decisions", "traps")})
            return [(record["section"], [row["id"] for row in record["rows"]])
                    for arguments in section_runs(params, head) for record in run(tx, sections_name, **arguments)]

        assert db.read(lambda tx: sections(tx, True)) == db.read(lambda tx: sections(tx, False)), budget


def test_a_pack_reads_its_sections_in_one_run_when_the_constraints_fit_it():
    params = statement_parameters(BootstrapRequest(token_budget=400), NOW)
    one = pack_runs(params, head_row(constraints=TOP_CAPPED, ready=3))
    assert len(one) == 1 and one[0]["top"] == TOP_CAPPED and one[0]["budget_chars"] == MAX_LIMIT
    assert marks(one) == [{"constraints": True, "ready": True, "decisions": True, "traps": True}]
    two = head_row(constraints=TOP_CAPPED + 1)
    assert pack_runs(params, two) == section_runs(params, two, params["likely_constraints"])


@pytest.mark.parametrize("fence", FENCES)
@pytest.mark.parametrize("constraints", [0, 1, TOP_CAPPED - 1, TOP_CAPPED, TOP_CAPPED + 1])
def test_packs_read_in_one_run_or_two_match_the_oracle(db, fence, constraints):
    s = Store(db)
    if constraints:
        s.many([{"project_id": "p", "kind": "constraint", "content": f"rule {n} " + "long words " * n}
                for n in range(constraints)], age_days=1)
    s.many([{"project_id": "p/sub", "kind": kind, "content": f"{kind} {n}"}
            for kind in ("decision", "task", "failure_pattern") for n in range(4)], age_days=2)
    for request in ({**fence}, {**fence, "terms": ["rule", "words"]}, {**fence, "token_budget": 60},
                    {**fence, "token_budget": 0}, {**fence, "token_budget": 100_000}):
        assert s.pack(**request) == oracle_pack(db, request, NOW), request


@pytest.mark.parametrize("fence", FENCES)
def test_constraints_written_after_the_head_are_read_with_their_own_run(db, fence, monkeypatch):
    """The head counted no constraint, so the pack reads every section in one run; 15 are stored (a
    write committed between the two statements): the run comes back full, and the constraints are
    read again with their own run, as the pack reads them when the head counts them."""
    from graphsvc.store import bootstrap

    s = Store(db)
    s.many([{"project_id": "p", "kind": "constraint", "content": f"rule {n}"} for n in range(15)], age_days=1)
    s.many([{"project_id": "p", "kind": "task", "content": f"task {n}"} for n in range(3)], age_days=2)
    request = BootstrapRequest(**fence)
    params = statement_parameters(request, NOW)
    expected = db.read(lambda tx: bootstrap.read_sections(tx, request, params))
    assert len(expected["constraints"]) == 15
    real_run, runs = bootstrap.run, []

    def stale_head(tx: Any, name: str, **arguments: Any) -> Any:
        rows = real_run(tx, name, **arguments)
        if name == "bootstrap/head":
            return [{**dict(rows[0]), "constraints_total": 0}]
        runs.append([section["name"] for section in arguments["sections"]])
        return rows

    monkeypatch.setattr(bootstrap, "run", stale_head)
    assert db.read(lambda tx: bootstrap.read_sections(tx, request, params)) == {**expected, "constraints_total": 0}
    assert runs == [["constraints", "ready", "decisions", "traps"], ["constraints"]]
