"""Read-your-own-writes across workers and cluster members: the driver's bookmarks, per request.

A Neo4j cluster (or Aura) answers reads from followers / read replicas that may lag the leader,
and N stateless graphsvc workers share no memory. The engine's own answer is the bookmark: every
committed write yields one, and a transaction started with it waits until the member serving it
has applied that write. So a surface opens an `exchange` per request with the bookmark the caller
sent back (HTTP header `Graphsvc-Bookmark`, MCP argument `bookmark`); `Database` starts every
session with `session_bookmarks()` and records what each write committed with `record_write`,
and the surface hands `written` back to the caller.

The token a caller sees is opaque: "v1." + base64url(JSON list of the driver's raw bookmark
strings), so it is one header-safe value however many bookmarks it carries. A context variable
(not a parameter through every service method) keeps the routes and the service untouched;
the exchange object is mutable because the work runs in a worker thread with a copied context.
"""

from __future__ import annotations

import base64
import binascii
import json
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Iterator

from neo4j import Bookmarks

from graphsvc.errors import BadRequest

HEADER = "Graphsvc-Bookmark"
_PREFIX = "v1."
#: A cluster bookmark is ~50 bytes per database; anything this long is not one we issued.
MAX_TOKEN_CHARS = 4096


@dataclass
class Exchange:
    """The bookmarks one request waits for, and the latest one its writes committed."""

    wait_for: Bookmarks
    written: Bookmarks | None = None
    field: str = "bookmark"  # how the caller's surface names it, for errors


_current: ContextVar[Exchange | None] = ContextVar("graphsvc_bookmark_exchange", default=None)


def encode(bookmarks: Bookmarks) -> str:
    raw = json.dumps(sorted(bookmarks.raw_values), separators=(",", ":")).encode()
    return _PREFIX + base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode(token: str, field: str = "bookmark") -> Bookmarks:
    """The bookmarks in a token this service issued; anything else is a 400 naming `field`."""
    bad = BadRequest(f"{field} is not a bookmark this service issued; send back the value of a write's "
                     f"{HEADER} header (MCP: its `bookmark` field) unchanged, or omit it", field=field)
    token = token.strip()
    if not token.startswith(_PREFIX) or len(token) > MAX_TOKEN_CHARS:
        raise bad
    body = token[len(_PREFIX):]
    try:
        values = json.loads(base64.urlsafe_b64decode(body + "=" * (-len(body) % 4)))
    except (binascii.Error, ValueError):
        raise bad from None
    if not isinstance(values, list) or not all(isinstance(value, str) and value for value in values):
        raise bad
    return Bookmarks.from_raw_values(values)


@contextmanager
def exchange(wait_for: Bookmarks | None = None, field: str = "bookmark") -> Iterator[Exchange]:
    """Scope one request: its reads wait for `wait_for`; `written` is set by its writes."""
    current = Exchange(wait_for if wait_for is not None else Bookmarks(), field=field)
    reset = _current.set(current)
    try:
        yield current
    finally:
        _current.reset(reset)


def from_token(token: str | None, field: str = "bookmark") -> Bookmarks | None:
    """`decode` for an optional value (None or "" means: nothing to wait for)."""
    return decode(token, field) if token else None


def session_bookmarks() -> Bookmarks | None:
    """What the next session of this request must wait for (its own last write, else the caller's)."""
    current = _current.get()
    if current is None:
        return None
    return current.written if current.written is not None else current.wait_for


def field_name() -> str:
    """The name of the bookmark input in the current request (HTTP header or MCP argument)."""
    current = _current.get()
    return current.field if current is not None else "bookmark"


def record_write(bookmarks: Bookmarks) -> None:
    """Remember a committed write's bookmark; later sessions of the request chain on it."""
    current = _current.get()
    if current is not None and bookmarks:
        current.written = bookmarks
