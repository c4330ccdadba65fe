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

    ``term_tokens``: the request's term tokens this capsule holds, when the reader already
    matched them (the store keeps each capsule's folded tokens equal to
    ``text_tokens(headline, content)``, so the set is the same one ranking would find). Coverage
    only asks which term tokens a capsule holds, so ranking uses it instead of tokenizing the
    text again; ``None`` means "not matched": ranking tokenizes headline and content.
    """

    id: str
    project_id: str
    headline: str
    content: str
    updated_at: datetime
    tier: str
    superseded: bool
    term_tokens: frozenset[str] | None = None
