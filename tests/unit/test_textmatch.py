"""Tokenization and term coverage: raw tokens, case and diacritics folded."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from graphsvc.core.textmatch import covered_terms, covered_tokens, term_token_sets, text_tokens, tokenize


def test_tokenize_lowercases_and_splits_on_non_alphanumerics() -> None:
    assert tokenize("Neo4j driver-v5, POOL!") == ["neo4j", "driver", "v5", "pool"]


def test_underscore_separates_tokens() -> None:
    assert tokenize("snake_case_name") == ["snake", "case", "name"]


def test_latin_diacritics_are_folded() -> None:
    assert tokenize("Café crème brûlée") == ["cafe", "creme", "brulee"]
    assert tokenize("Ünïcödé ÅNGSTRÖM") == ["unicode", "angstrom"]


def test_decomposed_and_precomposed_forms_agree() -> None:
    assert tokenize("cafe\u0301") == tokenize("caf\u00e9") == ["cafe"]


def test_caseless_forms_agree() -> None:
    assert tokenize("Straße") == tokenize("STRASSE") == ["strasse"]


def test_compatibility_forms_are_normalised() -> None:
    assert tokenize("ﬁle ＡＢＣ１２３") == ["file", "abc123"]


def test_non_latin_scripts_are_tokens_too() -> None:
    assert tokenize("Ωμέγα Привет 東京") == ["ωμεγα", "привет", "東京"]


def test_text_without_alphanumerics_has_no_tokens() -> None:
    assert tokenize("") == []
    assert tokenize("-- !!! ... ___") == []
    assert tokenize("™") == ["tm"]  # NFKD spells the sign out


def test_text_tokens_does_not_join_across_texts() -> None:
    assert text_tokens("neo", "4j") == frozenset({"neo", "4j"})


def test_term_token_sets_drops_empty_terms_and_duplicates_in_first_order() -> None:
    terms = ["Café", "--", "", "neo4j driver", "cafe", "Driver NEO4J", "   ", "pool"]
    assert term_token_sets(terms) == [
        frozenset({"cafe"}),
        frozenset({"neo4j", "driver"}),
        frozenset({"pool"}),
    ]


def test_terms_without_tokens_match_nothing_and_do_not_raise() -> None:
    sets = term_token_sets(["--", "!!!", "·"])
    assert sets == []
    assert covered_tokens(sets, text_tokens("anything at all")) == 0
    assert covered_terms(sets, text_tokens("anything at all")) == 0


def test_covered_tokens_counts_distinct_term_tokens_with_partial_credit() -> None:
    sets = term_token_sets(["neo4j driver", "driver", "pool"])
    assert covered_tokens(sets, text_tokens("The DRIVER leaks")) == 1
    assert covered_tokens(sets, text_tokens("driver pool")) == 2
    assert covered_tokens(sets, text_tokens("Neo4j driver pool")) == 3
    assert covered_tokens(sets, text_tokens("nothing relevant")) == 0


def test_covered_terms_needs_every_token_of_a_term() -> None:
    sets = term_token_sets(["neo4j driver", "pool"])
    assert covered_terms(sets, text_tokens("the driver")) == 0
    assert covered_terms(sets, text_tokens("neo4j driver")) == 1
    assert covered_terms(sets, text_tokens("Neo4j DRIVER pool")) == 2


@given(st.text())
def test_tokens_are_nonempty_alphanumeric_and_stable_under_refolding(text: str) -> None:
    tokens = tokenize(text)
    assert all(token and all(char.isalnum() for char in token) for token in tokens)
    assert tokenize(" ".join(tokens)) == tokens


LATIN = "abcdefghijklmnopqrstuvwxyzàáâäçèéêëìíîïñòóôöùúûüýÿ0123456789 -_.,"


@given(st.text(alphabet=LATIN, max_size=60))
def test_latin_text_matches_regardless_of_case_and_accents(text: str) -> None:
    plain = text.translate(str.maketrans("àáâäçèéêëìíîïñòóôöùúûüýÿ", "aaaaceeeeiiiinoooouuuuyy"))
    assert tokenize(text.upper()) == tokenize(text) == tokenize(plain)


@given(st.lists(st.text(max_size=30), max_size=10))
def test_every_tokenful_term_covers_itself(terms: list[str]) -> None:
    sets = term_token_sets(terms)
    for term in terms:
        tokens = text_tokens(term)
        if tokens:
            assert tokens in sets
    assert len(sets) == len(set(sets))
    for tokens in sets:
        assert covered_terms([tokens], text_tokens(" ".join(sorted(tokens)))) == 1
