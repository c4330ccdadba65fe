"""The most terms a request may carry (64 of 200 characters: ~1,900 distinct tokens) rank exactly.

Without a fence, term candidates come from full-text indexes, and Lucene refuses a query of more
than 1024 clauses: the tokens are split over several queries. The pack equals the v1 read's.
"""

from __future__ import annotations

from datetime import timedelta

from graphsvc.clock import fixed_clock
from graphsvc.service import GraphService
from graphsvc.store.bootstrap import term_parameters

from .bootstrap_support import NOW, Store
from .oracle import oracle_pack


def test_sixty_four_long_terms_without_a_fence(db):
    service = GraphService(db, clock=fixed_clock(NOW))
    service.ingest({"items": [
        {"project_id": "p", "kind": kind, "content": f"{kind} about t63w29 and t0w0"}
        for kind in ("constraint", "decision", "failure_pattern", "task")] + [
        {"project_id": "p", "kind": "decision", "content": f"plain decision {n}"} for n in range(12)]})
    terms = [" ".join(f"t{i}w{j}" for j in range(30))[:200] for i in range(64)]
    request = {"terms": terms}
    pack = service.bootstrap(request)
    assert pack == oracle_pack(db, request, NOW)
    assert pack["decisions"][0]["headline"] == "decision about t63w29 and t0w0"  # the covering row ranks first


#: Project ids a Lucene query must quote or escape, split on whitespace, or cannot name at all.
ODD_PROJECTS = ["f/with space", "f/two  spaces", 'f/"quoted"', "f/back\\slash", "f/-", "f/*", "f/(", "f/:",
                "f/AND", "f/OR x", "f/é", "-", "*", "(", ":", '"', "\\", "_ -"]


def test_a_fence_finds_its_term_rows_in_every_project_whatever_its_id(db):
    # With a fence, term rows come from the full-text index with the fence's project ids in the
    # query (PROJECTS_PER_QUERY to a query); rows without the term are fresher, so any term row
    # the query missed would change the pack.
    def ingest(age_days: float, items: list[dict[str, str]]) -> None:
        GraphService(db, clock=fixed_clock(NOW - timedelta(days=age_days))).ingest({"items": items})

    numbered = [f"f/n{i:03d}" for i in range(300)]
    ingest(30, [{"project_id": p, "kind": kind, "content": f"{kind} zebra in {p}"}
                for p in ODD_PROJECTS for kind in ("constraint", "decision", "failure_pattern", "task")])
    # the freshest term decisions sit in the last numbered projects: the fence's last query
    ingest(25, [{"project_id": p, "kind": "decision", "content": f"decision zebra in {p}"} for p in numbered[:290]])
    ingest(20, [{"project_id": p, "kind": "decision", "content": f"decision zebra in {p}"} for p in numbered[290:]])
    ingest(1, [{"project_id": p, "kind": kind, "content": f"fresh {kind} {n}"} for p in ("f", "fx", "g/f")
               for kind in ("constraint", "decision", "failure_pattern", "task") for n in range(12)])
    service = GraphService(db, clock=fixed_clock(NOW))
    request = {"project_prefix": "f", "terms": ["zebra"]}
    pack = service.bootstrap(request)
    assert pack == oracle_pack(db, request, NOW)
    assert [row["project_id"] for row in pack["decisions"]] == numbered[290:]
    for project in ODD_PROJECTS:
        for fence in ({"project_id": project}, {"project_prefix": project}):
            request = {**fence, "terms": ["zebra"]}
            pack = service.bootstrap(request)
            assert pack == oracle_pack(db, request, NOW), request
            assert [row["headline"] for row in pack["decisions"]] == [f"decision zebra in {project}"], request
            assert [row["headline"] for row in pack["traps"]] == [f"failure_pattern zebra in {project}"], request


def test_the_coverage_cut_keeps_the_boundary_ties_and_skips_dead_rows(db):
    # With terms, each section takes from the full-text index, in coverage order, the k-th best
    # coverage among LIVE rows (the cut) and reads only the rows at or above it. Here the best
    # rows are tombstoned, superseded or expired (the cut must look past them), and the rows tied
    # at the boundary share one instant, so only the id breaks the tie.
    s = Store(db)
    for kind in ("constraint", "decision", "failure_pattern", "task"):
        both = s.many([{"project_id": project, "kind": kind, "content": f"{kind} alpha beta {n}"}
                       for n in range(4) for project in ("c", "c/x")], age_days=30)
        dead = s.many([{"project_id": "c", "kind": kind, "content": f"{kind} alpha beta gamma {n}",
                        **({"valid_to": (NOW - timedelta(days=1)).isoformat()} if n == 2 else {})}
                       for n in range(3)], age_days=5)
        s.tombstone(dead[0])
        if kind in ("constraint", "decision"):
            s.supersede(both[0], dead[1])
        s.many([{"project_id": project, "kind": kind, "content": f"{kind} alpha only {n}"}
                for n in range(6) for project in ("c", "c/x", "d")], age_days=20)  # one instant: ties
        s.many([{"project_id": "c", "kind": kind, "content": f"{kind} beta only {n}"} for n in range(3)], age_days=25)
        s.many([{"project_id": "c", "kind": kind, "content": f"fresh {kind} {n}"} for n in range(12)], age_days=1)
    for fence in ({}, {"project_prefix": "c"}, {"project_id": "c"}, {"project_id": "c/x"}):
        for terms in (["alpha", "beta"], ["alpha beta"], ["alpha", "alpha beta", "gamma"], ["beta"]):
            for budget in (200, 1500):
                request = {**fence, "terms": terms, "token_budget": budget}
                pack = s.pack(**request)
                assert pack == oracle_pack(db, request, NOW), request
    pack = s.pack(project_prefix="c", terms=["alpha", "beta"])
    assert [row["headline"] for row in pack["decisions"][:8]] == [f"decision alpha beta {n}" for n in range(4) for _ in (0, 1)]


def test_a_full_query_of_project_ids_that_are_long_phrases_stays_under_lucenes_clause_limit(db):
    # A project id with whitespace is a phrase of up to ~100 terms; a full fenced query names
    # PROJECTS_PER_QUERY of them beside the term clauses. Lucene counts a phrase as one clause.
    projects = [("w/" + " ".join(f"w{i}x{j}" for j in range(60)))[:190].strip() for i in range(300)]
    service = GraphService(db, clock=fixed_clock(NOW - timedelta(days=1)))
    service.ingest({"items": [{"project_id": p, "kind": "decision", "content": f"decision zebra {n}"}
                              for n, p in enumerate(projects)]})
    # 64 terms, 316 tokens: 632 ranking clauses (under RANK_CLAUSES), + 256 project phrases a query
    terms = ["zebra"] + [" ".join(f"t{n}y{j}" for j in range(5)) for n in range(63)]
    assert term_parameters(terms)["rank_query"] is not None
    request = {"project_prefix": "w", "terms": terms}
    pack = GraphService(db, clock=fixed_clock(NOW)).bootstrap(request)
    assert pack == oracle_pack(db, request, NOW)
    assert len(pack["decisions"]) == 10
