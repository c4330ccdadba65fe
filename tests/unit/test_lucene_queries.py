"""The Lucene query texts the pack statement sends (graphsvc.store.bootstrap): pure string building.

Whether Lucene scores them as intended is tested against the real Neo4j (tests/integration/
test_bootstrap_many_terms.py compares packs with the v1 oracle); here, their shape and limits.
"""

from __future__ import annotations

from hypothesis import given, strategies as st

from graphsvc.core.textmatch import term_token_sets
from graphsvc.store.bootstrap import (
    RANK_CLAUSES, rank_query, term_parameters, token_queries, whole_weight,
)


def test_each_term_is_a_group_worth_more_than_every_token_together():
    params = term_parameters(["parser bug", "crash"])
    assert params["whole_weight"] == 4 == whole_weight(params["tokens"])
    assert params["rank_query"] == ("(+tokens:/bug/^4 +tokens:/parser/^0) (+tokens:/crash/^4) "
                                    "tokens:/bug/^1 tokens:/crash/^1 tokens:/parser/^1")


def test_a_token_is_matched_literally_whatever_its_characters():
    # Folded tokens are letters and digits today; anything else is escaped, never a regexp operator.
    assert rank_query([["a.b*"]], ["a.b*"]) == "(+tokens:/a\\.b\\*/^2) tokens:/a\\.b\\*/^1"
    assert rank_query([["naïve"]], ["naïve"]) == "(+tokens:/naïve/^2) tokens:/naïve/^1"


def test_no_exact_scores_means_no_rank_query():
    assert rank_query([], []) is None
    long = "x" * 256  # the whitespace analyzer indexes it as two terms
    assert rank_query([[long]], [long]) is None
    assert rank_query([["x" * 255]], ["x" * 255]) is not None
    many = [f"t{n}" for n in range(RANK_CLAUSES // 2 + 1)]
    assert rank_query([[t] for t in many], many) is None  # 2 clauses per single-token term
    assert rank_query([[t] for t in many[:-1]], many[:-1]) is not None


@given(st.lists(st.text(min_size=1, max_size=30), min_size=1, max_size=8))
def test_the_score_weights_order_rows_as_the_ranking_key(terms):
    # whole * weight + tokens compares as (whole, tokens) for every reachable pair of coverages.
    token_sets = term_token_sets(terms)
    tokens = sorted(frozenset().union(*token_sets)) if token_sets else []
    weight = whole_weight(tokens)
    pairs = [(w, t) for w in range(len(token_sets) + 1) for t in range(len(tokens) + 1)]
    for a in pairs:
        for b in pairs:
            assert (a > b) == (a[0] * weight + a[1] > b[0] * weight + b[1])


def test_token_queries_name_the_tokens_field():
    assert token_queries(["a", 'q"x']) == ['tokens:("a" OR "q\\"x")']
