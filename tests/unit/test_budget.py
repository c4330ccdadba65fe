"""The one cost rule, the self-counting settle and the priority-prefix search."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from graphsvc.core.budget import longest_fitting_prefix, settle_self_count, token_cost, tokens_for_chars


def test_token_cost_is_ceil_quarter_of_compact_sorted_json() -> None:
    assert token_cost("cap-1") == 2  # '"cap-1"' is 7 chars
    assert token_cost({}) == 1
    assert token_cost({"b": 1, "a": "x"}) == math.ceil(len('{"a":"x","b":1}') / 4)
    assert token_cost({"id": "cap-12", "headline": "abc"}) == 8  # 32 chars
    assert token_cost({"id": "cap-12", "headline": "abcd"}) == 9  # 33 chars: rounds up
    assert tokens_for_chars(0) == 0 and tokens_for_chars(1) == 1 and tokens_for_chars(8) == 2


def test_token_cost_counts_non_ascii_as_written_not_escaped() -> None:
    assert token_cost("ééééé") == 2  # 7 chars; \u00e9 escapes would be 32
    assert token_cost("東京") == 1


def test_token_cost_ignores_key_insertion_order() -> None:
    assert token_cost({"z": 1, "a": [1, 2]}) == token_cost({"a": [1, 2], "z": 1})


# ---------------------------------------------------------------- settle_self_count


def honest(fixed_chars: int, occurrences: int, count: int) -> bool:
    """Does a body of fixed_chars plus `occurrences` copies of `count` cost exactly `count` tokens?"""
    return count == math.ceil((fixed_chars + occurrences * len(str(count))) / 4)


def test_settle_examples() -> None:
    assert settle_self_count(0, 0) == 0
    assert settle_self_count(3) == 1  # 3 + "1" = 4 chars = 1 token
    assert settle_self_count(36) == 10  # 36 + "10" = 38 chars = 10 tokens ("9" would make 37 chars, 10 tokens)
    # two honest answers: 35 + "9" = 36 chars = 9 tokens, and 35 + "10" = 37 chars = 10 tokens; the least wins
    assert honest(35, 1, 9) and honest(35, 1, 10)
    assert settle_self_count(35) == 9
    assert settle_self_count(391, 3) == 100  # the floor holds its figure three times: 391 + 3 * 3 = 400 chars


def test_settle_refuses_negative_input() -> None:
    with pytest.raises(ValueError):
        settle_self_count(-1)


@given(st.integers(0, 10**7) | st.integers(0, 2_000), st.integers(0, 4))
def test_settle_is_the_least_honest_count(fixed_chars: int, occurrences: int) -> None:
    count = settle_self_count(fixed_chars, occurrences)
    assert honest(fixed_chars, occurrences, count)
    lowest_possible = math.ceil((fixed_chars + occurrences) / 4)  # every count has at least one digit
    assert not any(honest(fixed_chars, occurrences, smaller) for smaller in range(lowest_possible, count))


# ---------------------------------------------------------------- longest_fitting_prefix


@given(st.integers(0, 5_000), st.integers(0, 6_000))
def test_prefix_search_finds_the_boundary_and_probes_little(available: int, threshold: int) -> None:
    probes: list[int] = []

    def fits(k: int) -> bool:
        probes.append(k)
        assert 0 < k <= available
        return k <= threshold

    kept = longest_fitting_prefix(available, fits)
    assert kept == min(available, threshold)
    # everything is tried first; after that every measured body is at most about twice the
    # answer, and there are only O(log) measurements
    assert probes[:1] == ([available] if available else [])
    if kept == available:
        assert len(probes) <= 1
    assert max(probes[1:], default=0) <= max(1, 2 * kept)
    assert len(probes) <= 2 * math.log2(available + 2) + 3


def test_prefix_search_with_nothing_available_measures_nothing() -> None:
    assert longest_fitting_prefix(0, lambda k: pytest.fail("no probe expected")) == 0


@given(st.integers(0, 5_000), st.integers(0, 6_000), st.integers(-20, 5_020))
def test_prefix_search_from_a_guess_finds_the_same_boundary(available: int, threshold: int, guess: int) -> None:
    """A guess only says where to start: any guess, good or bad, gives the row-by-row answer."""
    probes: list[int] = []

    def fits(k: int) -> bool:
        probes.append(k)
        assert 0 < k <= available
        return k <= threshold

    kept = longest_fitting_prefix(available, fits, guess=guess)
    assert kept == min(available, threshold)
    error = abs(min(max(guess, 0), available) - kept)
    assert len(probes) <= 2 * math.log2(error + 2) + 3


@pytest.mark.parametrize(("available", "threshold"), [(40, 17), (40, 0), (40, 39), (1, 0)])
def test_an_exact_guess_costs_two_measurements(available: int, threshold: int) -> None:
    probes: list[int] = []

    def fits(k: int) -> bool:
        probes.append(k)
        return k <= threshold

    assert longest_fitting_prefix(available, fits, guess=threshold) == threshold
    assert sorted(set(probes)) == sorted({k for k in (threshold, threshold + 1) if k > 0})
