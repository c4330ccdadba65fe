"""The Lucene query texts the pack statement sends (graphsvc.store.bootstrap): pure string building.

Whether Lucene scores them as intended is tested against the real Neo4j (tests/integration/
test_bootstrap_many_terms.py compares packs with the v1 oracle); here, their shape and limits.
"""

from __future__ import annotations

from hypothesis import given, strategies as st

from graphsvc.core.textmatch import term_token_sets
from graphsvc.store.bootstrap import (
    AT_LEAST_TOKENS, KIND_CLAUSES, PROJECTS_PER_QUERY, RANK_CLAUSES, SECTIONS, at_least_queries, coverage_score,
    kind_clause, minimal_token_sets, rank_query, term_parameters, token_queries, whole_weight,
)
from graphsvc.core.retrieve import Group
from graphsvc.store.retrieve import MAX_CLAUSES, lucene_queries, prefix_clause, scored_query


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


def test_at_least_queries_name_the_smallest_token_sets_reaching_each_score():
    params = term_parameters(["parser bug", "crash"])  # weight 4: crash alone 5, bug+parser 6
    assert params["at_least"] == [
        [1, '(+tokens:"bug") (+tokens:"crash") (+tokens:"parser")'],
        [5, '(+tokens:"crash") (+tokens:"bug" +tokens:"parser")'],
        [6, '(+tokens:"bug" +tokens:"crash") (+tokens:"bug" +tokens:"parser") (+tokens:"crash" +tokens:"parser")'],
        [11, '(+tokens:"bug" +tokens:"crash" +tokens:"parser")'],
    ]


def test_no_at_least_queries_without_exact_scores_or_past_the_token_limit():
    assert at_least_queries([], []) == []
    long = "x" * 256
    assert at_least_queries([[long]], [long]) == []  # no rank query: the statement filters by score alone
    many = [f"t{n}" for n in range(AT_LEAST_TOKENS + 1)]
    assert at_least_queries([[t] for t in many], many) == []
    assert len(at_least_queries([[t] for t in many[:-1]], many[:-1])) == AT_LEAST_TOKENS


@given(st.lists(st.text(alphabet="abcdef ", min_size=1, max_size=12), min_size=1, max_size=5), st.data())
def test_a_capsule_matches_the_query_of_every_score_it_reaches_and_no_other(terms, data):
    # The at-least sets, read as the query does (one set held whole), against the coverage score
    # itself, for any token set a capsule may hold.
    token_sets = term_token_sets(terms)
    if not token_sets:
        return
    tokens = sorted(frozenset().union(*token_sets))
    if len(tokens) > AT_LEAST_TOKENS:
        return
    term_sets = [sorted(ts) for ts in token_sets]
    weight = whole_weight(tokens)
    reached = minimal_token_sets(term_sets, tokens)
    held = frozenset(data.draw(st.sets(st.sampled_from(tokens))))
    score = coverage_score(term_sets, held, weight)
    reachable = {coverage_score(term_sets, frozenset(s), weight) for s in _subsets(tokens)} - {0}
    assert set(reached) == reachable
    for level, sets in reached.items():
        assert any(held.issuperset(s) for s in sets) == (score >= level)
        # minimal: dropping any token of a set falls below the level
        assert all(coverage_score(term_sets, frozenset(s) - {t}, weight) < level for s in sets for t in s)


def _subsets(tokens):
    return [[t for bit, t in enumerate(tokens) if mask >> bit & 1] for mask in range(1 << len(tokens))]


def test_a_kind_clause_names_the_kinds_sorted_and_quoted():
    assert kind_clause(["task", "epic", "task"]) == 'kind:("epic" "task")'
    assert [s["kinds"] for s in SECTIONS] == ['kind:("constraint")', 'kind:("epic" "task")', 'kind:("decision")',
                                              'kind:("failure_pattern")']


def test_a_fenced_section_query_stays_within_lucenes_clause_limit():
    # rank + at-least clauses (RANK_CLAUSES together), a full chunk of project ids, the section's kinds
    assert max(s["kinds"].count('"') // 2 for s in SECTIONS) <= KIND_CLAUSES
    assert RANK_CLAUSES + PROJECTS_PER_QUERY + KIND_CLAUSES <= 1024


def test_a_retrieve_requires_its_kinds_only_when_it_names_them():
    assert lucene_queries([["a", "b"], ["c"]], None) == ['(+tokens:"a" +tokens:"b") (+tokens:"c")']
    assert lucene_queries([["a"]], "p/x", ["fact", "decision"]) == [
        '+(kind:("decision" "fact")) +(+project_id:"p/x" +((+tokens:"a")))']


def test_a_retrieve_fenced_by_a_prefix_asks_lucene_for_the_subtree_when_a_term_can_hold_it():
    assert lucene_queries([["a"]], None, None, "p05") == ['+project_id:p05* +((+tokens:"a"))']
    # an exact project wins over the prefix (SPEC §2: both given = AND, and the project is inside it)
    assert lucene_queries([["a"]], "p/x", None, "p") == ['+project_id:"p/x" +((+tokens:"a"))']
    assert prefix_clause('a+b/c:d (e)') is None  # whitespace: the analyzer would cut it in two terms
    assert prefix_clause('a+b/c:d') == 'project_id:a\\+b\\/c\\:d*'
    assert prefix_clause('q"\\') == 'project_id:q\\"\\\\*'
    assert prefix_clause("é" * 255) is not None and prefix_clause("é" * 256) is None
    assert prefix_clause("\U0001F600" * 128) is None  # 256 UTF-16 units


@given(st.text(min_size=1, max_size=40))
def test_every_special_character_of_a_prefix_clause_is_escaped(prefix):
    clause = prefix_clause(prefix)
    if clause is None:
        assert any(char.isspace() for char in prefix)
        return
    body = clause[len("project_id:"):-1]
    unescaped, escaped = [], False
    for char in body:
        if escaped:
            unescaped.append(char)
            escaped = False
        elif char == "\\":
            escaped = True
        else:
            assert char not in '+-!():^[]"{}~*?|&/', (prefix, clause)
            unescaped.append(char)
    assert not escaped and "".join(unescaped) == prefix


def _groups(*token_sets: set[str], aliases: tuple[frozenset[str], ...] = ()) -> list[Group]:
    return [Group(" ".join(sorted(ts)), frozenset(ts), aliases if n == 0 else ()) for n, ts in enumerate(token_sets)]


def test_a_scored_retrieve_query_requires_a_group_and_scores_the_coverage():
    # weight 4 (three caller tokens + 1): the match and the fences are required at weight 0, so the
    # score is the pack's rank query over the groups' own token sets.
    groups = _groups({"parser", "bug"}, {"crash"})
    assert scored_query(groups, None, None) == (
        '+((+tokens:"bug" +tokens:"parser") (+tokens:"crash"))^0 '
        + rank_query([["bug", "parser"], ["crash"]], ["bug", "crash", "parser"]))
    assert scored_query(groups, "p/x", ["task", "epic"]) == (
        '+((+tokens:"bug" +tokens:"parser") (+tokens:"crash"))^0 +project_id:"p/x"^0 +(kind:("epic" "task"))^0 '
        + rank_query([["bug", "parser"], ["crash"]], ["bug", "crash", "parser"]))
    assert scored_query(groups, None, None, "p05").startswith(
        '+((+tokens:"bug" +tokens:"parser") (+tokens:"crash"))^0 +project_id:p05*^0 (')
    # a prefix the analyzer would split is filtered by the statement alone
    assert "project_id" not in scored_query(groups, None, None, "a b")


def test_no_scored_retrieve_query_with_an_alias_or_past_lucenes_limits():
    assert scored_query([], None, None) is None
    assert scored_query(_groups({"postgres"}, aliases=(frozenset({"pg"}),)), None, None) is None
    assert scored_query(_groups({"x" * 256}), None, None) is None  # split by the analyzer: no exact score
    # 2 clauses per single-token group (match, whole term), 1 per token covered, 1 fence: 341 groups take
    # 3 * 341 + 1 = 1024 clauses and fit, 342 do not
    fits = [{f"t{n}"} for n in range((MAX_CLAUSES - 1) // 3)]
    assert scored_query(_groups(*fits), "p", None) is not None
    assert scored_query(_groups(*fits, {"one-more"}), "p", None) is None
