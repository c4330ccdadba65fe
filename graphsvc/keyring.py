"""Resolving a presented bearer credential to a `Principal`, with a per-worker cache.

`GRAPHSVC_API_TOKEN` is an admin key over the whole store whose idempotency
scope is the token's SHA-256. Any other credential must be an API key,
`gsk_<id>_<secret>` (graphsvc.core.apikeys): its `:ApiKey` node is looked up by id, the secret's
salted hash compared in constant time, and a revoked key refused.

Cache: each worker keeps what a lookup returned (a key, or that there is none) for at most
`TTL` = 1 s, so a revocation holds on every worker's next request once a second has passed, and
a worker serving many requests with one key asks Neo4j about it once a second, not per request.
The secret is checked against the cached hash on every request. `last_used_at` is written at most
once per `TOUCH_EVERY` per key and worker (and the statement itself skips a key another worker
touched within that time), never once per request.
"""

from __future__ import annotations

import hmac
import logging
import threading
import time
from datetime import timedelta
from typing import Any, Callable, Mapping

from graphsvc.access import Principal
from graphsvc.clock import Clock
from graphsvc.core.apikeys import KEY_RULE, looks_like_key, parse_key, secret_matches
from graphsvc.errors import ServiceError, Unauthorized
from graphsvc.store import keys as key_store
from graphsvc.store.db import Database
from graphsvc.store.idempotency import caller_scope

log = logging.getLogger(__name__)

TTL = 1.0
TOUCH_EVERY = timedelta(minutes=1)
#: Cached lookups per worker; past it the cache starts again (ids of made-up keys cannot grow it forever).
MAX_CACHED = 10_000
ENV_TOKEN_LABEL = "GRAPHSVC_API_TOKEN"


class KeyRing:
    def __init__(self, db: Database, clock: Clock, ttl: float = TTL, monotonic: Callable[[], float] = time.monotonic):
        self.db = db
        self.clock = clock
        self.ttl = ttl
        self._monotonic = monotonic
        self._cache: dict[str, tuple[float, Mapping[str, Any] | None]] = {}
        self._touched: dict[str, float] = {}
        self._lock = threading.Lock()

    def forget(self) -> None:
        """Drop every cached lookup (tests that wipe the store between cases)."""
        with self._lock:
            self._cache.clear()
            self._touched.clear()

    def cached(self, token: bytes, env_token: bytes | None) -> Principal | None:
        """The principal when it can be decided without Neo4j (the env token, a malformed key, a
        fresh cache entry with no last_used_at due); None when `authenticate` must run (off the loop)."""
        if env_token is not None and hmac.compare_digest(token, env_token):
            return self._env_principal(token)
        parsed = parse_key(token)
        if parsed is None:
            raise self._refusal(token)
        now = self._monotonic()
        entry = self._cache.get(parsed[0])
        if entry is None or entry[0] <= now or self._touch_due(parsed[0], now):
            return None
        return self._judge(parsed, entry[1])

    def authenticate(self, token: bytes, env_token: bytes | None) -> Principal:
        """The principal for `token`, or Unauthorized (401). May read (and, once a minute, write) Neo4j."""
        known = self.cached(token, env_token)
        if known is not None:
            return known
        key_id, secret = parsed = parse_key(token) or ("", "")
        now = self._monotonic()
        entry = self._cache.get(key_id)
        if entry is None or entry[0] <= now:
            row = key_store.lookup(self.db, key_id)
            with self._lock:
                if len(self._cache) >= MAX_CACHED:
                    self._cache.clear()
                self._cache[key_id] = (now + self.ttl, row)
        else:
            row = entry[1]
        principal = self._judge(parsed, row)
        if self._touch_due(key_id, now):
            self._touched[key_id] = now
            try:
                key_store.touch(self.db, key_id, self.clock(), TOUCH_EVERY)
            except ServiceError as exc:  # bookkeeping: never the reason a request fails
                log.warning("could not record the use of key %s: %s", key_id, exc.message)
        return principal

    def _touch_due(self, key_id: str, now: float) -> bool:
        last = self._touched.get(key_id)
        return last is None or now - last >= TOUCH_EVERY.total_seconds()

    @staticmethod
    def _env_principal(token: bytes) -> Principal:
        return Principal(key_id=None, label=ENV_TOKEN_LABEL, right="admin", prefixes=None, caller=caller_scope(token))

    @staticmethod
    def _refusal(token: bytes) -> Unauthorized:
        if looks_like_key(token):
            return Unauthorized(f"the API key is malformed; a key reads {KEY_RULE}")
        return Unauthorized("the bearer token is not valid")

    @staticmethod
    def _judge(parsed: tuple[str, str], row: Mapping[str, Any] | None) -> Principal:
        key_id, secret = parsed
        if row is None or not secret_matches(row["secret_hash"], row["salt"], secret):
            return _raise(Unauthorized("the API key is not valid"))
        if row["revoked_at"] is not None:
            return _raise(Unauthorized(f"API key {key_id} is revoked; ask an operator for a new one"))
        prefixes = tuple(row["prefixes"]) if row["prefixes"] is not None else None
        return Principal(key_id=key_id, label=row["label"], right=row["rights"], prefixes=prefixes,
                         caller=f"key:{key_id}")


def _raise(error: Exception) -> Any:
    raise error
