"""Idempotency keys (SPEC §5): a retried write returns its first result and writes nothing.

A caller that lost a response (timeout, dropped connection, a crash between commit and
reply) cannot know whether its write committed; with a key it can simply send the same
request again. The key is kept as an `(:IdempotencyKey)` node — never a capsule, so no
capsule read, export or pack sees it — written in the SAME transaction as the write it
guards (`guard` composes with a store module's tx-function), so "stored" and "written"
can never disagree:

1. the key's node is MERGEd first: the uniqueness constraint on (caller, key) makes that
   a lock, so a concurrent request with the same key waits for the first to finish;
2. a live key with the same request hash → `Replayed` (the stored status and body; the
   transaction, which wrote nothing, rolls back); a live key with another hash → 422;
3. otherwise the write runs and its rendered result is stored with the key.

A refused write (any error) rolls the key back with everything else: nothing was written,
so the next attempt runs for real. Keys expire after the service's TTL (24 h by default)
and are purged in bounded batches. `caller` scopes keys to the bearer token (its SHA-256,
never the token); with auth off every caller shares one scope.
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Callable, TypeVar

from neo4j import ManagedTransaction

from graphsvc.errors import BadRequest, Conflict, IdempotencyKeyReused, Unavailable
from graphsvc.store.db import Database, run

log = logging.getLogger(__name__)
T = TypeVar("T")
TxWork = Callable[[ManagedTransaction], T]
Wrap = Callable[[TxWork[Any]], TxWork[Any]]

DEFAULT_TTL = timedelta(hours=24)
#: A UUID, a ULID, a hash or a "<client>:<n>" counter all fit; nothing that could break a header or a log.
KEY_PATTERN = re.compile(r"[A-Za-z0-9._~:+/=-]{1,200}")
KEY_RULE = ("1 to 200 characters from A-Z a-z 0-9 and . _ ~ : + / = - (a fresh UUID per logical write "
            "is ideal; reuse it only to retry that same write)")
#: The status each write answers with on success; a replay answers with the one stored.
SUCCESS_STATUS = {"ingest": 201, "import": 201, "relate": 200, "update": 200, "tombstone": 200, "alias": 200,
                  "session_start": 201, "session_finish": 200,
                  "claim": 200, "release": 200}
PURGE_BATCH = 100


class Replayed(Exception):
    """Control flow, not an error: the key already holds this request's result."""

    def __init__(self, status: int, body: Any):
        super().__init__("replayed")
        self.status = status
        self.body = body


def within(wrap: Wrap | None, work: TxWork[T]) -> TxWork[T]:
    """`work`, composed with a wrapping unit of work when there is one (store modules call this)."""
    return wrap(work) if wrap is not None else work


def caller_scope(token: bytes | str | None) -> str:
    """The scope a bearer token's keys live in: its SHA-256 hex ("" when auth is off)."""
    if not token:
        return ""
    raw = token.encode("utf-8") if isinstance(token, str) else token
    return hashlib.sha256(raw).hexdigest()


def request_hash(operation: str, request: Any) -> str:
    """SHA-256 of the canonical request: operation + the body with sorted keys, compact, ASCII."""
    canonical = json.dumps([operation, request], sort_keys=True, separators=(",", ":"), ensure_ascii=True,
                           default=str)
    return hashlib.sha256(canonical.encode("ascii")).hexdigest()


class IdempotencyKey:
    """A caller's key for ONE logical write, as a surface hands it to the service.

    After the call `replayed` tells the surface whether the answer came from the store
    (HTTP then says so in `Idempotent-Replayed: true`).
    """

    def __init__(self, key: str, caller: str = "", field: str = "idempotency_key"):
        self.key = key
        self.caller = caller
        self.field = field
        self.replayed = False
        self.status: int | None = None

    @classmethod
    def parse(cls, raw: Any, caller: str = "", field: str = "idempotency_key") -> "IdempotencyKey | None":
        """None when absent; a 400 that teaches the format when it is malformed."""
        if raw is None:
            return None
        if not isinstance(raw, str) or not KEY_PATTERN.fullmatch(raw):
            raise BadRequest(f"{field}: must be {KEY_RULE}", field=field)
        return cls(raw, caller, field)

    def claim(self, operation: str, request: Any, now: datetime, ttl: timedelta) -> "Claim":
        return Claim(self, operation, request_hash(operation, request), now, now + ttl)


@dataclass(frozen=True)
class Claim:
    """One keyed write in flight: what is compared and what is stored."""

    key: IdempotencyKey
    operation: str
    request_hash: str
    now: datetime
    expires_at: datetime

    @property
    def params(self) -> dict[str, Any]:
        return {"caller": self.key.caller, "key": self.key.key, "now": self.now}


def _judge(claim: Claim, rows: list[Any]) -> None:
    """Raise `Replayed` or the 422 when the key already names a live request; return when it is free."""
    if not rows or not rows[0]["live"] or rows[0]["request_hash"] is None:
        return
    stored = rows[0]
    if stored["request_hash"] != claim.request_hash:
        first = stored["operation"] or "another write"
        raise IdempotencyKeyReused(
            f"{claim.key.field} '{claim.key.key}' already names a different request (first used for "
            f"{first} with another body); a key identifies ONE write: resend exactly that request to get its "
            "result, or use a new key for a new request. Nothing was written.",
            field=claim.key.field,
        )
    raise Replayed(stored["status"], json.loads(stored["response"]))


def guard(claim: Claim, render: Callable[[Any], Any]) -> Wrap:
    """A wrap for a store tx-function: claim the key, replay or refuse, else write and record."""

    def wrap(work: TxWork[T]) -> TxWork[T]:
        def unit(tx: ManagedTransaction) -> T:
            _judge(claim, run(tx, "idempotency/claim", **claim.params))
            result = work(tx)
            run(tx, "idempotency/record", **claim.params, operation=claim.operation,
                request_hash=claim.request_hash, status=SUCCESS_STATUS[claim.operation],
                response=json.dumps(render(result), ensure_ascii=True, separators=(",", ":")),
                expires_at=claim.expires_at)
            return result

        return unit

    return wrap


def check(db: Database, claim: Claim) -> None:
    """Replay or refuse BEFORE a multi-transaction write (import) starts; return when the key is free."""
    db.read(lambda tx: _judge(claim, run(tx, "idempotency/lookup", **claim.params)))


def purge_expired(db: Database, now: datetime, limit: int = PURGE_BATCH) -> int:
    """Delete up to `limit` expired keys; best effort (a busy or absent Neo4j only delays it)."""
    try:
        return db.write(lambda tx: run(tx, "idempotency/purge_expired", now=now, limit=limit)[0]["purged"])
    except (Unavailable, Conflict):
        log.debug("idempotency key purge skipped; the next keyed write retries it")
        return 0
