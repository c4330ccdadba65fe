"""With terms, a ranked section reads the rows at or above its coverage cut, and only those.

The cut is the k-th best coverage score among a section's live rows; the rows scoring at least it
come from Lucene through the cut's `at_least` query (graphsvc.store.bootstrap.at_least_queries),
a zero-weight required clause beside the scoring query. Here: that clause matches exactly the rows
the score alone would keep, under Lucene's own parser and scoring, and packs whose cut falls among
many ties rank exactly as the v1 read does.
"""

from __future__ import annotations

import pytest

from graphsvc.store import bootstrap
from graphsvc.store.bootstrap import read_inputs, term_parameters
from graphsvc.models import BootstrapRequest

from .bootstrap_support import NOW, Store, ids
from .oracle import oracle_pack

TERMS = ["parser bug", "crash"]

#: Every mix of the request's tokens a capsule may hold (score: whole terms * 4 + tokens).
MIXES = ["", "bug", "crash", "parser", "bug parser", "bug crash", "crash parser", "bug crash parser"]


def scores_by_query(db, query: str) -> dict[str, float]:
    records = db._driver.execute_query(
        "CALL db.index.fulltext.queryNodes('capsule_terms', $query) YIELD node, score RETURN node.id AS id, score",
        {"query": query}).records
    return {record["id"]: record["score"] for record in records}


def test_each_at_least_query_keeps_exactly_the_rows_scoring_at_least_its_score(db):
    s = Store(db)
    s.many([{"project_id": "p", "kind": "decision", "content": f"decision {n} {mix}"}
            for n, mix in enumerate(MIXES * 3)])
    params = term_parameters(TERMS)
    ranked = scores_by_query(db, params["rank_query"])
    assert sorted(set(ranked.values())) == [1.0, 5.0, 6.0, 11.0]
    assert [level for level, _ in params["at_least"]] == [1, 5, 6, 11]
    for level, query in params["at_least"]:
        kept = scores_by_query(db, "+(" + params["rank_query"] + ") +(" + query + ")^0")
        # the same rows as filtering by score, each with its score unchanged by the zero-weight clause
        assert kept == {capsule: score for capsule, score in ranked.items() if score >= level}, level


@pytest.mark.parametrize("fence", [{}, {"project_id": "p"}, {"project_prefix": "p"}])
def test_a_cut_among_many_ties_ranks_as_the_v1_read(db, fence):
    # 10 decisions can show: 4 hold both terms (score 11), then 30 tie at one whole term (5 or 6),
    # fresher rows without any term and older ones with a lone token sit below the cut.
    s = Store(db)
    s.many([{"project_id": "p", "kind": "decision", "content": f"best {n} parser bug crash"} for n in range(4)],
           age_days=40)
    tied = [s.put("decision", f"tied {n} " + ("crash" if n % 2 else "parser bug"), project_id="p", age_days=1 + n)
            for n in range(30)]
    s.many([{"project_id": "p", "kind": "decision", "content": f"fresh {n}"} for n in range(12)], age_days=0.5)
    s.many([{"project_id": "p", "kind": "decision", "content": f"lone {n} bug"} for n in range(12)], age_days=50)
    request = {"terms": TERMS, **fence}
    pack = s.pack(**request)
    assert pack == oracle_pack(db, request, NOW)
    shown = ids(pack["decisions"])
    assert len(shown) == 10 and all(not capsule.startswith("fresh") for capsule in shown)
    # What travelled: the 10 best, each carrying the coverage the statement scored; after the four
    # holding everything, the freshest six of the fifteen "parser bug" rows (a whole term and two
    # tokens beat a whole term and one).
    rows = read_inputs(db, BootstrapRequest(**request), NOW).decisions
    assert [row.coverage for row in rows] == [(2, 3)] * 4 + [(1, 2)] * 6
    assert [row.id for row in rows][4:] == tied[0:12:2] == shown[4:]


def test_a_capsule_two_fence_chunks_find_counts_once_at_the_cut(db, monkeypatch):
    # One project per full-text query: `p/a`'s query also finds `p/a b`'s capsules (the whitespace
    # analyzer splits that id), so six term rows come back twice. Counted twice they would fill the
    # ten decision slots, the section would skip its decay order and show six rows instead of ten.
    monkeypatch.setattr(bootstrap, "PROJECTS_PER_QUERY", 1)
    s = Store(db)
    s.many([{"project_id": "p/a b", "kind": "decision", "content": f"term {n} crash"} for n in range(6)], age_days=20)
    s.many([{"project_id": "p/a", "kind": "decision", "content": f"plain {n}"} for n in range(8)], age_days=1)
    request = {"terms": ["crash"], "project_prefix": "p"}
    pack = s.pack(**request)
    assert len(pack["decisions"]) == 10 and pack == oracle_pack(db, request, NOW)


def test_a_token_lucene_indexes_in_pieces_does_not_count_as_covered(db):
    # 255 letters then "bug" are one folded token, which the whitespace analyzer indexes as two
    # pieces, the second exactly "bug": Lucene scores the capsule as covering the term. Its coverage
    # is its text's, none, so the older capsule that does say "bug" ranks first.
    s = Store(db)
    real = s.put("decision", "a real bug here", age_days=5)
    pieces = s.put("decision", "a" * 255 + "bug", age_days=1)
    request = {"terms": ["bug"]}
    pack = s.pack(**request)
    assert ids(pack["decisions"]) == [real, pieces]
    assert pack == oracle_pack(db, request, NOW)


@pytest.mark.parametrize("fence", [{}, {"project_prefix": "nott"}])
def test_tokens_lucene_would_index_in_pieces_take_no_place_at_the_cut(db, fence):
    # Ten fresher capsules each hold 255 letters + "bug": one folded token, which the whitespace
    # analyzer indexed (before schema v4) as two terms, the second exactly "bug". Lucene then scored
    # them as covering the term, they filled the ten decision slots at the cut, and the older capsule
    # that does say "bug" never left Neo4j. Stored marked (maintain.stored_token), no piece is "bug".
    s = Store(db)
    real = s.put("decision", "a real bug here", age_days=5)
    s.many([{"project_id": "nott", "kind": "decision", "content": f"note {n} " + "a" * 255 + "bug"}
            for n in range(10)], age_days=1)
    request = {"terms": ["bug"], **fence}
    pack = s.pack(**request)
    assert ids(pack["decisions"])[0] == real and len(pack["decisions"]) == 10
    assert pack == oracle_pack(db, request, NOW)
    assert db._driver.execute_query(
        "CALL db.index.fulltext.queryNodes('capsule_terms', 'tokens:bug') YIELD node RETURN collect(node.id) AS found"
    ).records[0]["found"] == [real]


def test_a_request_token_too_long_for_lucene_is_matched_in_the_stored_form(db):
    # "ﬃ" folds to "ffi": a 100-character term is one 300-unit token, which `tokens` stores marked.
    # The request's token must be marked the same way, or the capsule holding it scores nothing.
    s = Store(db)
    holder = s.put("decision", "note " + "ﬃ" * 100, age_days=30)
    for n in range(10):
        s.put("decision", f"plain note {n}", age_days=1)
    request = {"terms": ["ﬃ" * 100]}
    params = term_parameters(request["terms"])
    assert params["rank_query"] is None and "~" in params["tokens"][0]  # the phrase fallback, marked
    pack = s.pack(**request)
    assert ids(pack["decisions"])[0] == holder and len(pack["decisions"]) == 10
    assert pack == oracle_pack(db, request, NOW)
