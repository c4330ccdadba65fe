"""A service on a settable clock, for the integration modules that write at chosen instants
(conftest's `clock` and `svc` fixtures start from here)."""

from __future__ import annotations

from datetime import datetime, timezone

#: Where the `clock` fixture starts: the modules' "now".
NOW = datetime(2026, 12, 1, 12, 0, tzinfo=timezone.utc)


class Clock:
    """A settable clock: a test sets `now` to write at chosen instants; the service reads it once per request."""

    def __init__(self, now: datetime):
        self.now = now

    def __call__(self) -> datetime:
        return self.now
