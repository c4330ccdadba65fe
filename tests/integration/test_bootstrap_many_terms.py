"""The most terms a request may carry (64 of 200 characters: ~1,900 distinct tokens) rank exactly.

Without a fence, term candidates come from full-text indexes, and Lucene refuses a query of more
than 1024 clauses: the tokens are split over several queries. The pack equals the v1 read's.
"""

from __future__ import annotations

from graphsvc.clock import fixed_clock
from graphsvc.service import GraphService

from .bootstrap_support import NOW
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
