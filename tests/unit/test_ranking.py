"""Section ranking: covered term tokens desc, decay desc (as exact age asc), numeric id asc."""

from __future__ import annotations

import random
from datetime import datetime, timedelta, timezone

import pytest
from hypothesis import given
from hypothesis import strategies as st

from graphsvc.core.candidates import Candidate
from graphsvc.core.ranking import HALF_LIFE_DAYS, age_microseconds, decay, id_number, rank
from graphsvc.core.textmatch import term_token_sets, tokenize

NOW = datetime(2026, 12, 2, 14, 0, tzinfo=timezone.utc)


def capsule(number: int, text: str = "", *, days_old: float = 0.0) -> Candidate:
    return Candidate(
        id=f"cap-{number}",
        project_id="proj",
        headline=text or f"capsule {number}",
        content=text or f"capsule {number}",
        updated_at=NOW - timedelta(days=days_old),
        tier="active",
        superseded=False,
    )


def ids(candidates: list[Candidate]) -> list[str]:
    return [c.id for c in candidates]


def test_half_life_is_ninety_days() -> None:
    assert HALF_LIFE_DAYS == 90
    assert decay(NOW, NOW) == 1.0
    assert decay(NOW - timedelta(days=90), NOW) == pytest.approx(0.5)
    assert decay(NOW - timedelta(days=180), NOW) == pytest.approx(0.25)


def test_future_updates_count_as_fresh_not_fresher() -> None:
    assert decay(NOW + timedelta(days=3), NOW) == 1.0


def test_decay_compares_instants_across_offsets() -> None:
    plus_two = timezone(timedelta(hours=2))
    assert decay(datetime(2026, 12, 2, 16, 0, tzinfo=plus_two), NOW) == 1.0


def test_naive_datetimes_are_rejected() -> None:
    with pytest.raises(ValueError, match="timezone-aware"):
        decay(datetime(2026, 1, 1), NOW)
    with pytest.raises(ValueError, match="timezone-aware"):
        decay(NOW, datetime(2026, 1, 1))


def test_id_number_reads_the_numeric_part() -> None:
    assert id_number("cap-17") == 17
    assert id_number("cap-0010") == 10
    for bad in ("cap-", "cap-x", "17", "CAP-1", "cap-1 "):
        with pytest.raises(ValueError):
            id_number(bad)


def test_without_terms_order_is_decay_then_numeric_id() -> None:
    candidates = [
        capsule(10, days_old=5),
        capsule(9, days_old=5),
        capsule(100, days_old=1),
        capsule(2, days_old=400),
        capsule(3, days_old=-2),  # future: as fresh as now
        capsule(4, days_old=0),
    ]
    assert ids(rank(candidates, [], NOW)) == ["cap-3", "cap-4", "cap-100", "cap-9", "cap-10", "cap-2"]


def test_centuries_old_capsules_still_rank_newer_first() -> None:
    # 0.5 ** (age / 90 days) underflows to 0.0 past ~265 years; the exact age does not.
    assert decay(NOW - timedelta(days=300 * 365), NOW) == decay(NOW - timedelta(days=400 * 365), NOW) == 0.0
    candidates = [capsule(1, days_old=400 * 365), capsule(2, days_old=300 * 365)]
    assert ids(rank(candidates, [], NOW)) == ["cap-2", "cap-1"]
    assert ids(rank(candidates, term_token_sets(["capsule"]), NOW)) == ["cap-2", "cap-1"]


def test_age_is_exact_microseconds_clamped_at_zero() -> None:
    assert age_microseconds(NOW - timedelta(days=1, microseconds=3), NOW) == 86_400_000_003
    assert age_microseconds(NOW + timedelta(days=3), NOW) == 0
    with pytest.raises(ValueError, match="timezone-aware"):
        age_microseconds(datetime(2026, 1, 1), NOW)


def test_terms_rank_by_coverage_before_decay() -> None:
    candidates = [
        capsule(1, "fresh but unrelated", days_old=0),
        capsule(2, "old neo4j driver pool notes", days_old=700),
        capsule(3, "driver only", days_old=10),
        capsule(4, "Driver and pool", days_old=20),
        capsule(5, "pool and driver", days_old=20),
    ]
    term_sets = term_token_sets(["neo4j driver", "pool"])
    assert ids(rank(candidates, term_sets, NOW)) == ["cap-2", "cap-4", "cap-5", "cap-3", "cap-1"]


def test_multi_word_terms_get_partial_credit_per_distinct_token() -> None:
    # §4: coverage is the fraction of distinct term TOKENS, so matching "driver"
    # alone beats matching nothing even though the phrase is incomplete.
    candidates = [capsule(1, "unrelated", days_old=0), capsule(2, "the driver", days_old=50)]
    assert ids(rank(candidates, term_token_sets(["neo4j driver"]), NOW)) == ["cap-2", "cap-1"]


def test_a_whole_term_outranks_more_scattered_tokens() -> None:
    # issue #4: a term is covered only when all its tokens occur; whole terms rank first,
    # token coverage (SPEC §4) breaks ties between equal whole-term counts.
    terms = term_token_sets(["alpha beta", "gamma delta epsilon"])
    candidates = [capsule(1, "alpha gamma delta", days_old=0), capsule(2, "alpha beta", days_old=60)]
    assert ids(rank(candidates, terms, NOW)) == ["cap-2", "cap-1"]


def test_unicode_terms_match_folded_text() -> None:
    candidates = [capsule(1, "fresh note", days_old=0), capsule(2, "Le CAFÉ ferme", days_old=30)]
    assert ids(rank(candidates, term_token_sets(["cafe"]), NOW)) == ["cap-2", "cap-1"]


def test_terms_without_tokens_leave_the_decay_order() -> None:
    candidates = [capsule(1, "--", days_old=9), capsule(2, "b", days_old=1)]
    assert rank(candidates, term_token_sets(["--", "!!"]), NOW) == rank(candidates, [], NOW)


WORDS = ["neo4j", "driver", "pool", "café", "retry", "deploy", "東京", "Straße"]


@st.composite
def candidate_lists(draw: st.DrawFn) -> list[Candidate]:
    numbers = draw(st.lists(st.integers(1, 5000), unique=True, max_size=25))
    return [
        capsule(
            number,
            " ".join(draw(st.lists(st.sampled_from(WORDS), min_size=1, max_size=4))),
            days_old=draw(st.sampled_from([-1, 0, 1, 30, 90, 400])),
        )
        for number in numbers
    ]


@given(candidate_lists(), st.lists(st.sampled_from(WORDS + ["neo4j driver", "--"]), max_size=4), st.randoms())
def test_rank_is_a_permutation_ordered_by_the_reference_key(
    candidates: list[Candidate], terms: list[str], rng: random.Random
) -> None:
    term_tokens = {token for term in terms for token in tokenize(term)}
    whole_terms = {frozenset(tokenize(term)) for term in terms if tokenize(term)}

    def reference_key(c: Candidate) -> tuple[int, int, int, int]:
        capsule_tokens = set(tokenize(c.headline)) | set(tokenize(c.content))
        age_us = max(0, (NOW - c.updated_at) // timedelta(microseconds=1))  # decay falls as age grows
        return (
            -sum(1 for term in whole_terms if term <= capsule_tokens),
            -len(term_tokens & capsule_tokens),
            age_us,
            int(c.id[4:]),
        )

    ranked = rank(candidates, term_token_sets(terms), NOW)
    assert sorted(ids(ranked)) == sorted(ids(candidates))  # terms never filter
    assert [reference_key(c) for c in ranked] == sorted(reference_key(c) for c in candidates)
    shuffled = list(candidates)
    rng.shuffle(shuffled)
    assert rank(shuffled, term_token_sets(terms), NOW) == ranked


@given(candidate_lists(), st.lists(st.sampled_from(WORDS + ["neo4j driver", "--"]), max_size=4))
def test_scored_coverage_ranks_exactly_as_the_text_does(candidates: list[Candidate], terms: list[str]) -> None:
    """The store sends each row's coverage as (whole terms, distinct tokens) of its stored tokens: same order as tokenizing."""
    from dataclasses import replace

    from graphsvc.core.textmatch import covered_terms, covered_tokens, text_tokens

    term_sets = term_token_sets(terms)
    scored = [replace(c, coverage=(covered_terms(term_sets, text_tokens(c.headline, c.content)),
                                   covered_tokens(term_sets, text_tokens(c.headline, c.content))))
              for c in candidates]
    assert ids(rank(scored, term_sets, NOW)) == ids(rank(candidates, term_sets, NOW))


def test_ranking_trusts_scored_coverage_over_the_text() -> None:
    """The scored pair is what counts (so a wrong one would show): the text says 'pool', the score says nothing."""
    pool_text = capsule(1, "pool", days_old=5)
    fresher = capsule(2, "other", days_old=1)
    assert ids(rank([pool_text, fresher], term_token_sets(["pool"]), NOW)) == ["cap-1", "cap-2"]
    from dataclasses import replace

    unscored_pool = replace(pool_text, coverage=(0, 0))
    assert ids(rank([unscored_pool, replace(fresher, coverage=(1, 1))], term_token_sets(["pool"]), NOW)) == ["cap-2", "cap-1"]
