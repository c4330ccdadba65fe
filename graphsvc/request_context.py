"""The id of the request being served, visible to every layer without being passed around.

A contextvar (not a parameter) because the id must reach log lines written deep in the
store and error bodies rendered by any surface, and threads started with anyio /
Starlette's threadpool copy the caller's context, so the id follows the work. Pure: no
I/O, no web imports, so errors.py and logging can read it.
"""

from __future__ import annotations

import re
import uuid
from contextvars import ContextVar

#: What a caller-supplied X-Request-ID may look like: long enough for a UUID or a trace id,
#: short and plain enough that it can never break a log line or a header.
REQUEST_ID_PATTERN = re.compile(r"[A-Za-z0-9._:-]{1,128}")

current_request_id: ContextVar[str | None] = ContextVar("graphsvc_request_id", default=None)


def new_request_id() -> str:
    return uuid.uuid4().hex


def accepted_request_id(given: str | None) -> str:
    """The caller's id when it is safe to echo and log, otherwise a fresh uuid4 hex."""
    if given is not None and REQUEST_ID_PATTERN.fullmatch(given):
        return given
    return new_request_id()

#: When the current call must have answered (time.monotonic()), set by the surface that bounds it
#: (graphsvc.surfaces.deadline); None outside a bounded call. The store retries a transient Neo4j
#: failure only while this leaves time (graphsvc.store.db.Database).
call_deadline: ContextVar[float | None] = ContextVar("graphsvc_call_deadline", default=None)
