"""The ONE serialization of a pack: the exact text every surface sends and the budget counts.

SPEC §4 makes ``budget.used_tokens`` the cost of the body the HTTP endpoint returns, so the
body has to be a pure function of the pack, defined in one place: the HTTP route sends
``canonical_json(pack).encode("utf-8")``, the MCP tool sends the same string as its text
content (and the same object as its structured content), and the budget fill measures
candidate packs with it. Any other rendering (the CLI's pretty print) is for reading only.

The rules: compact separators, ``ensure_ascii=False`` (a non-Latin character costs one
character, as on the wire, not a six-character escape), no NaN. The top level keeps its
insertion order, because a pack's top level IS the fixed section order (SPEC §4); every
nested object is written with sorted keys, whatever order it was built in.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

__all__ = ["canonical_json", "canonical_length", "canonical_members"]


#: One encoder for every call: the budget fill serializes a few candidate packs per request.
_ENCODER = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
_nested = _ENCODER.encode


def canonical_json(value: Any) -> str:
    """The canonical text of a pack (or of any JSON value: a row, an id).

    A top-level object keeps its key order; everything below it is key-sorted. The length
    of the result does not depend on key order, so for any object it equals the length of
    the fully sorted compact JSON: one cost rule for packs and rows alike.
    """
    if not isinstance(value, Mapping):
        return _nested(value)
    return "{" + ",".join(text for _, text in canonical_members(value)) + "}"


def canonical_members(value: Mapping[str, Any]) -> list[tuple[Any, str]]:
    """A top-level object's members in its key order, each as (key, its `"key":value` text):
    canonical_json joins them. So a text of the object less some top-level members (the ETag's,
    graphsvc.core.etag) is a join of the others, not a second encoding."""
    return [(key, f"{_nested(key)}:{_nested(item)}") for key, item in value.items()]


def canonical_length(value: Any) -> int:
    """``len(canonical_json(value))``, in one call of the C encoder: the length does not depend on
    key order (see canonical_json), so the fully sorted text has it too. For the budget fill's
    per-row sums, where a Python-level join per row would cost more than the row's encoding."""
    return len(_nested(value))
