"""The request clock: read once at the boundary, then passed down as a value.

Nothing below the surfaces calls `datetime.now()`; that is what makes the same
store + request + clock give byte-identical packs, and lets tests pin time.
"""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Callable

Clock = Callable[[], datetime]


def system_clock() -> datetime:
    """UTC now, truncated to milliseconds (Neo4j and JSON both keep that precision exactly)."""
    now = datetime.now(timezone.utc)
    return now.replace(microsecond=(now.microsecond // 1000) * 1000)


def fixed_clock(at: datetime) -> Clock:
    """A clock that always answers `at` (for tests, benchmarks and reproducible CLI runs)."""
    if at.tzinfo is None:
        raise ValueError("fixed_clock needs a timezone-aware datetime")
    pinned = at.astimezone(timezone.utc)
    return lambda: pinned
