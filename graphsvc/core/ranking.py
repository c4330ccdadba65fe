"""Ordering within a pack section: term coverage, then decay, then id.

Every key is a pure function of the capsule, the request's terms and the
request clock, so the same store, request and clock always rank the same way.
Decay is monotone in age, so the sort key is the exact integer age (clamped
at 0, in microseconds) rather than the float weight: the same order, without
the float underflowing to 0.0 (and tying everything) past ~265 years, and the
same key the bootstrap Cypher orders by (the clamped ``updated_at``).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import datetime, timedelta

from graphsvc.core.candidates import Candidate
from graphsvc.core.textmatch import covered_terms, covered_tokens, text_tokens

__all__ = ["HALF_LIFE_DAYS", "age_microseconds", "decay", "id_number", "rank"]

#: A capsule's weight halves every 90 days since its last update: a quarter
#: is long enough that standing knowledge does not vanish between releases,
#: short enough that last week's decision outranks last year's.
HALF_LIFE_DAYS = 90

_HALF_LIFE_SECONDS = HALF_LIFE_DAYS * 86_400
_CAPSULE_ID = re.compile(r"cap-(\d+)")
_MICROSECOND = timedelta(microseconds=1)


def _require_aware(value: datetime, name: str) -> None:
    if value.tzinfo is None or value.utcoffset() is None:
        raise ValueError(f"{name} must be timezone-aware (UTC), got naive {value.isoformat()}")


def decay(updated_at: datetime, now: datetime) -> float:
    """Exponential recency weight in (0, 1]: 1 when fresh, 0.5 after one half-life.

    A capsule updated "in the future" (clock skew) counts as fresh rather than
    as more than fresh, so skew cannot push it above everything else.
    """
    _require_aware(updated_at, "updated_at")
    _require_aware(now, "now")
    age_seconds = max(0.0, (now - updated_at).total_seconds())
    return 0.5 ** (age_seconds / _HALF_LIFE_SECONDS)


def age_microseconds(updated_at: datetime, now: datetime) -> int:
    """Exact age in whole microseconds, 0 for a future ``updated_at``: the rank key, since decay falls with age."""
    _require_aware(updated_at, "updated_at")
    _require_aware(now, "now")
    return max(0, (now - updated_at) // _MICROSECOND)


def id_number(capsule_id: str) -> int:
    """The numeric part of ``cap-<n>``: ids order by number, so cap-9 precedes cap-10."""
    match = _CAPSULE_ID.fullmatch(capsule_id)
    if match is None:
        raise ValueError(f"not a capsule id (expected 'cap-<n>'): {capsule_id!r}")
    return int(match.group(1))


def rank(
    candidates: Sequence[Candidate],
    term_sets: Sequence[frozenset[str]],
    now: datetime,
) -> list[Candidate]:
    """Order by coverage desc, decay desc (compared as exact age asc), numeric id asc.

    Coverage is compared as (whole terms covered, distinct term tokens covered):
    a term counts as covered when ALL its tokens occur in the capsule (issue #4),
    and among capsules covering as many whole terms, the one holding more of the
    request's distinct term tokens (SPEC §4's fraction) ranks first, so a
    half-matched phrase still beats no match. With single-word terms the two
    measures agree. Terms only re-rank: every candidate comes back. Without
    terms every coverage is 0 and the order is pure decay, then id. A
    candidate's ``coverage``, when set, is that pair as the reader scored it.
    """

    if not term_sets:  # no terms: every coverage is 0, so skip tokenizing altogether
        return sorted(candidates, key=lambda c: (age_microseconds(c.updated_at, now), id_number(c.id)))

    def sort_key(candidate: Candidate) -> tuple[int, int, int, int]:
        if candidate.coverage is None:
            tokens = text_tokens(candidate.headline, candidate.content)
            whole, partial = covered_terms(term_sets, tokens), covered_tokens(term_sets, tokens)
        else:
            whole, partial = candidate.coverage
        return (-whole, -partial, age_microseconds(candidate.updated_at, now), id_number(candidate.id))

    return sorted(candidates, key=sort_key)
