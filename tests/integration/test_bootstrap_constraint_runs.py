"""A pack reads its constraints to the rows its budget likely needs, and on only when those all fit.

graphsvc.store.bootstrap.constraint_rows runs the section statement for the constraints with
`likely_constraints` rows (graphsvc.core.pack.constraint_rows_likely: rows of LIKELY_ROW_CHARS),
and again with `top_constraints` (every row the budget could hold) when that run shipped all its
rows and they all fit. Here: short rows take the second run and show more constraints than the
first could hold; long rows take one; both packs are the oracle's.
"""

from __future__ import annotations

from typing import Any

import pytest

from graphsvc.core.pack import LIKELY_ROW_CHARS, constraint_rows_likely, constraint_rows_needed

from .bootstrap_support import NOW, Store
from .oracle import oracle_pack

FENCES = [{}, {"project_id": "p"}, {"project_prefix": "p"}]
BUDGET = 2_000


@pytest.mark.parametrize("fence", FENCES)
@pytest.mark.parametrize("short", [True, False], ids=["short-rows", "long-rows"])
def test_constraints_are_read_on_only_when_the_likely_rows_all_fit(db, fence, short, monkeypatch):
    from graphsvc.store import bootstrap

    s = Store(db)
    # A row's least cost: ~60 characters for `r<n>` in project p, ~190 for a long headline.
    content = (lambda n: f"r{n}") if short else (lambda n: f"rule {n} keeps the deploy pipeline green " * 4)
    s.many([{"project_id": "p", "kind": "constraint", "content": content(n)} for n in range(150)], age_days=1)
    s.many([{"project_id": "p/sub", "kind": "task", "content": f"task {n}"} for n in range(3)], age_days=2)
    likely, needed = constraint_rows_likely(BUDGET), constraint_rows_needed(BUDGET)
    assert likely < needed

    real_run, tops = bootstrap.run, []

    def recording(tx: Any, name: str, **arguments: Any) -> Any:
        if [section["name"] for section in arguments.get("sections", ())] == ["constraints"]:
            tops.append(arguments["top"])
        return real_run(tx, name, **arguments)

    monkeypatch.setattr(bootstrap, "run", recording)
    request = {**fence, "token_budget": BUDGET}
    pack = s.pack(**request)
    assert pack == oracle_pack(db, request, NOW)
    if short:
        assert tops == [likely, needed]
        assert len(pack["constraints"]) > likely  # the second run's rows are shown
    else:
        assert tops == [likely]
        assert len(pack["constraints"]) < likely
        assert min(len(row["headline"]) for row in pack["constraints"]) > LIKELY_ROW_CHARS - 60
