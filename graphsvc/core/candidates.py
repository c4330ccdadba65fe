"""The capsule fields that ranking and pack assembly need, and nothing else.

A plain frozen value, so the pure core can be tested with literals and never
has to know where capsules are stored.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

__all__ = ["Candidate"]


@dataclass(frozen=True)
class Candidate:
    """One capsule that may appear in a pack section.

    ``updated_at`` must be timezone-aware (UTC). ``tier`` and ``superseded``
    are only rendered for traps, where a stale or superseded row has to
    identify itself.

    ``coverage``: (whole terms covered, distinct term tokens covered) for the request's terms,
    when the reader already scored it (the store scores each capsule's folded tokens, kept equal
    to ``text_tokens(headline, content)`` up to an injective marking of tokens too long for Lucene,
    which the request's tokens share, so it is the pair ranking would compute). ``None``
    means "not scored": ranking tokenizes headline and content.

    ``lease_until``: set on ready work the asking agent itself holds under a live lease (SPEC §12),
    which the pack shows first, marked held.
    """

    id: str
    project_id: str
    headline: str
    content: str
    updated_at: datetime
    tier: str
    superseded: bool
    coverage: tuple[int, int] | None = None
    lease_until: datetime | None = None
