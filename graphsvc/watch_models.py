"""SPEC §13 watch inputs: a pack's request plus `etag` and `wait_s` (pydantic, like graphsvc.models)."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field, StrictInt

from graphsvc.models import BootstrapRequest, DigestRequest, StrictModel

WAIT_S_DEFAULT = 30
WAIT_S_MAX = 60
#: Longer than any ETag this service sends ("<32 hex>" with its quotes), short enough for a log line.
ETAG_MAX_CHARS = 200


class WatchFields(StrictModel):
    """What a watch adds to the pack's request."""

    etag: Annotated[str, Field(max_length=ETAG_MAX_CHARS)] | None = Field(
        default=None, description="the ETag header of the pack you hold, exactly as received (quotes included); "
        "without it the current pack is answered at once")
    wait_s: Annotated[StrictInt, Field(ge=1, le=WAIT_S_MAX)] = Field(
        default=WAIT_S_DEFAULT, description="seconds to wait for a different pack before answering 304 (1-60, "
        "default 30)")


class BootstrapWatchRequest(WatchFields, BootstrapRequest):
    """POST /v1/memory_bootstrap/watch: memory_bootstrap's request plus etag and wait_s."""


class DigestWatchRequest(WatchFields, DigestRequest):
    """POST /v1/memory_digest/watch: memory_digest's request plus etag and wait_s."""
