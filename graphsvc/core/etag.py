"""SPEC §13: a pack's strong ETag and RFC 9110's If-None-Match test. Pure.

The ETag is a hash of the pack's canonical body (graphsvc.core.canonical) with `as_of` left out,
so two packs of the same store that differ only in their clock share it: a poller that asks again
a second later with the same store is told "not modified". Everything else in the body (rows,
totals, the budget figures) enters the hash, so any difference an agent could see changes it.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from typing import Any

from graphsvc.core.canonical import canonical_members

__all__ = ["CLOCK_FIELD", "body_and_etag", "etag_of", "none_match"]

#: The one top-level field that moves with the request clock alone.
CLOCK_FIELD = "as_of"
#: Hex digits of SHA-256 kept: 128 bits, far past any collision a store could meet.
DIGEST_HEX = 32


def etag_of(body: Mapping[str, Any]) -> str:
    """The strong ETag (quotes included, as the header carries it) of a §4-style answer."""
    return body_and_etag(body)[1]


def body_and_etag(body: Mapping[str, Any]) -> tuple[str, str]:
    """The answer's canonical text (graphsvc.core.canonical.canonical_json) and its ETag, from one
    encoding of its members: the ETag hashes the canonical text of the answer less `as_of`, which is
    the same members joined without that one. A large pack's encoding is most of what serving it
    costs besides Neo4j."""
    members = canonical_members(body)
    text = "{" + ",".join(member for _, member in members) + "}"
    kept = "{" + ",".join(member for key, member in members if key != CLOCK_FIELD) + "}"
    return text, '"' + hashlib.sha256(kept.encode("utf-8")).hexdigest()[:DIGEST_HEX] + '"'


#: One entity-tag of RFC 9110 §8.8.3: an optional weakness indicator, then a quoted opaque-tag
#: (etagc excludes the double quote, so a comma inside the quotes stays inside the tag).
ENTITY_TAG = re.compile(r'(W/)?("[\x21\x23-\x7e\x80-\U0010ffff]*")')


def none_match(header: str | None, current: str) -> bool:
    """True when an `If-None-Match` header value matches `current`, i.e. the answer is 304.

    RFC 9110 §13.1.2: `*` matches any current representation; otherwise the header is a list of
    entity-tags compared weakly (§8.8.3.2: the opaque-tags are equal, `W/"x"` matches `"x"`).
    Empty or absent: no match; text that is not an entity-tag matches nothing.
    """
    if header is None:
        return False
    if header.strip() == "*":
        return True
    return any(match.group(2) == current for match in ENTITY_TAG.finditer(header))
