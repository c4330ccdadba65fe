"""API keys in Neo4j (issue 27): `(:ApiKey {id, label, rights, prefixes?, salt, secret_hash, created_at,
revoked_at?, last_used_at?})`.

The secret is shown once, by `create_key`, and never stored: only its salted hash
(graphsvc.core.apikeys explains the scheme). `prefixes` absent means the whole store. Listing and
revoking never return the salt or the hash. Checking a presented key is `lookup` + the constant-time
comparison in graphsvc.keyring, which caches lookups for at most a second.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any, Mapping

from graphsvc.access import normal_prefixes
from graphsvc.core.apikeys import new_key
from graphsvc.core.timefmt import iso_utc, native
from graphsvc.errors import NotFound
from graphsvc.store.db import Database, run


def key_json(row: Mapping[str, Any]) -> dict[str, Any]:
    """A key as operators see it: never the secret, the salt or the hash."""
    shown: dict[str, Any] = {"id": row["id"], "label": row["label"], "rights": row["rights"],
                             "prefixes": row["prefixes"]}
    for name in ("created_at", "revoked_at", "last_used_at"):
        shown[name] = iso_utc(native(row[name])) if row[name] is not None else None
    shown["revoked"] = row["revoked_at"] is not None
    return shown


def create_key(db: Database, label: str, rights: str, prefixes: list[str] | None, now: datetime) -> dict[str, Any]:
    """Store a new key and return it with its `key` (the only time the secret is shown)."""
    fresh = new_key()
    scope = list(normal_prefixes(prefixes)) if prefixes is not None else None
    db.write(lambda tx: run(tx, "keys/create", id=fresh["id"], label=label, rights=rights, prefixes=scope,
                            salt=fresh["salt"], secret_hash=fresh["secret_hash"], now=now))
    return {"id": fresh["id"], "key": fresh["key"], "label": label, "rights": rights, "prefixes": scope,
            "created_at": iso_utc(now)}


def list_keys(db: Database) -> list[dict[str, Any]]:
    return [key_json(row) for row in db.query("keys/list")]


def revoke_key(db: Database, key_id: str, now: datetime) -> dict[str, Any]:
    """Revoke a key (idempotent: the first revoked_at stays); an unknown id is a 404 naming it."""
    rows = db.write(lambda tx: run(tx, "keys/revoke", id=key_id, now=now))
    if not rows:
        raise NotFound(f"no API key with id {key_id}; `graphsvc keys list` shows them", field="id")
    return key_json(rows[0])


def lookup(db: Database, key_id: str) -> Mapping[str, Any] | None:
    rows = db.query("keys/by_id", id=key_id)
    return dict(rows[0]) if rows else None


def touch(db: Database, key_id: str, now: datetime, every: timedelta) -> None:
    """Set last_used_at to `now` unless it is more recent than `every` ago."""
    db.write(lambda tx: run(tx, "keys/touch", id=key_id, now=now, before=now - every))
