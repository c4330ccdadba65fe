"""The one cost function and the priority-prefix fill."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from graphsvc.core.budget import BudgetFill, token_cost


def test_token_cost_is_ceil_quarter_of_compact_sorted_json() -> None:
    assert token_cost("cap-1") == 2  # '"cap-1"' is 7 chars
    assert token_cost({}) == 1
    assert token_cost({"b": 1, "a": "x"}) == math.ceil(len('{"a":"x","b":1}') / 4)
    assert token_cost({"id": "cap-12", "headline": "abc"}) == 8  # 32 chars
    assert token_cost({"id": "cap-12", "headline": "abcd"}) == 9  # 33 chars: rounds up


def test_token_cost_counts_non_ascii_as_written_not_escaped() -> None:
    assert token_cost("ééééé") == 2  # 7 chars; \u00e9 escapes would be 32
    assert token_cost("東京") == 1


def test_token_cost_ignores_key_insertion_order() -> None:
    assert token_cost({"z": 1, "a": [1, 2]}) == token_cost({"a": [1, 2], "z": 1})


def test_negative_budget_is_a_programming_error() -> None:
    with pytest.raises(ValueError):
        BudgetFill(-1)


def test_floors_are_charged_even_past_the_budget() -> None:
    fill = BudgetFill(5)
    assert fill.charge_floor(10, ["cap-1"], is_row=True)
    assert fill.charge_floor(3, [], is_row=False)
    assert fill.used_tokens == fill.floor_tokens == 10 + 2 + 3
    assert fill.remaining == -10
    assert not fill.admit(1, [])
    assert fill.trimmed_rows == 1


def test_a_row_is_admitted_with_its_new_handles_or_not_at_all() -> None:
    fill = BudgetFill(20)
    assert fill.admit(8, ["cap-1"])  # 8 + 2
    assert fill.used_tokens == 10
    assert fill.admit(10, ["cap-1"])  # handle already charged: 10 fits exactly
    assert fill.used_tokens == 20
    assert not fill.admit(0, ["cap-2"])  # the handle alone (2) does not fit
    assert fill.used_tokens == 20


def test_once_a_row_misses_every_later_row_is_trimmed() -> None:
    fill = BudgetFill(30)
    assert fill.admit(10, [])
    assert not fill.admit(25, [])
    assert not fill.admit(1, [])  # would fit, but never skips ahead
    assert fill.used_tokens == 10
    assert fill.trimmed_rows == 2


def test_zero_budget_charges_nothing_but_reports_floor_cost() -> None:
    fill = BudgetFill(0)
    assert not fill.charge_floor(10, ["cap-1"], is_row=True)
    assert not fill.charge_floor(4, ["cap-2", "cap-3"], is_row=False)
    assert not fill.admit(1, [])
    assert fill.used_tokens == 0
    assert fill.floor_tokens == 12 + 4 + 2 + 2
    assert fill.trimmed_rows == 2  # the floor row and the content row; the marker is no row


rows = st.lists(
    st.tuples(st.integers(1, 40), st.lists(st.sampled_from(["cap-1", "cap-22", "cap-333"]), max_size=2)),
    max_size=20,
)


@given(st.integers(0, 300), st.integers(1, 60), rows)
def test_fill_keeps_a_prefix_within_budget(budget: int, floor_cost: int, candidates: list) -> None:
    fill = BudgetFill(budget)
    fill.charge_floor(floor_cost, [], is_row=True)
    admitted = [fill.admit(cost, row_ids) for cost, row_ids in candidates]
    kept = admitted.count(True)
    assert admitted == [True] * kept + [False] * (len(admitted) - kept)
    expected_trimmed = len(candidates) - kept + (1 if budget == 0 else 0)
    assert fill.trimmed_rows == expected_trimmed
    if budget >= floor_cost:
        assert fill.used_tokens <= budget
    charged_ids = {i for _, row_ids in candidates[:kept] for i in row_ids}
    expected_used = 0 if budget == 0 else floor_cost + sum(c for c, _ in candidates[:kept])
    expected_used += 0 if budget == 0 else sum(token_cost(i) for i in charged_ids)
    assert fill.used_tokens == expected_used
    if budget > 0 and kept < len(candidates):
        cost, row_ids = candidates[kept]
        new_ids = set(row_ids) - charged_ids
        assert cost + sum(token_cost(i) for i in new_ids) > budget - fill.used_tokens
