"""The one canonical serialization: the exact text HTTP sends, MCP repeats and the budget counts."""

from __future__ import annotations

import json
import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from graphsvc.core.budget import token_cost
from graphsvc.core.canonical import canonical_json, canonical_length


def test_top_level_keeps_its_order_nested_objects_are_sorted() -> None:
    value = {"z": 1, "a": {"y": [{"b": 2, "a": 1}], "x": None}, "m": "é"}
    assert canonical_json(value) == '{"z":1,"a":{"x":null,"y":[{"a":1,"b":2}]},"m":"é"}'


def test_non_objects_are_plain_compact_json() -> None:
    assert canonical_json(["b", {"d": 1, "c": 2}]) == '["b",{"c":2,"d":1}]'
    assert canonical_json("東京") == '"東京"'  # written, not \\u-escaped: one character each
    assert canonical_json(7) == "7"


def test_not_a_number_is_refused_rather_than_written_as_invalid_json() -> None:
    with pytest.raises(ValueError):
        canonical_json({"x": float("nan")})


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4),
    max_leaves=20,
)


@given(st.dictionaries(st.text(max_size=8), json_values, max_size=6))
def test_it_parses_back_to_the_same_object_and_its_length_is_order_free(value: dict) -> None:
    text = canonical_json(value)
    assert json.loads(text) == value
    assert list(json.loads(text)) == list(value)  # top-level order survives
    assert len(text) == len(json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False))
    assert token_cost(value) == math.ceil(len(text) / 4)
    assert canonical_length(value) == len(text)
    assert canonical_length(list(value.values())) == len(canonical_json(list(value.values())))
