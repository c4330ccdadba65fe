"""One way to write instants: ISO-8601 UTC with milliseconds and a `Z`."""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any


def iso_utc(value: datetime) -> str:
    value = value.astimezone(timezone.utc)
    return value.strftime("%Y-%m-%dT%H:%M:%S.") + f"{value.microsecond // 1000:03d}Z"


def native(value: Any) -> datetime | None:
    """A driver temporal (neo4j.time.DateTime) or datetime as an aware UTC datetime."""
    if value is None:
        return None
    if hasattr(value, "to_native"):
        value = value.to_native()
    return value.astimezone(timezone.utc)
