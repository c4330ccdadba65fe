"""API key format and secret hashing (issue 27), pure.

A key reads `gsk_<id>_<secret>`: `gsk_` makes a leaked key recognisable to secret scanners, `<id>`
(12 lowercase hex digits) names its `:ApiKey` node and is safe to log, `<secret>` is 32 random
bytes as 64 hex digits.

Hash scheme: the store keeps `secret_hash` = SHA-256(salt || secret) with a per-key 16-byte random
`salt`, never the secret. A slow password hash (bcrypt, scrypt, Argon2) exists to stretch
low-entropy human passwords against guessing; this secret is 256 bits from `secrets`, so guessing
it from a stolen hash is 2^256 work whatever the hash's speed, and a fast hash keeps checking a key
to microseconds (the issue's target: <= 0.5 ms per request). The salt makes equal secrets (there
are none in practice) hash differently and rules out precomputed tables. No server-side pepper:
the CLI and every worker share nothing but Neo4j, and a pepper would add a secret to distribute
without adding to 256 bits of entropy. The stored hash is compared in constant time
(`hmac.compare_digest`).
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets

PREFIX = "gsk_"
KEY_PATTERN = re.compile(r"gsk_([0-9a-f]{12})_([0-9a-f]{64})")
KEY_ID = re.compile(r"[0-9a-f]{12}")
KEY_RULE = "gsk_<12 lowercase hex digits>_<64 lowercase hex digits>"


def parse_key(token: str | bytes) -> tuple[str, str] | None:
    """(id, secret) of a well-formed key, or None."""
    if isinstance(token, bytes):
        try:
            token = token.decode("ascii")
        except UnicodeDecodeError:
            return None
    match = KEY_PATTERN.fullmatch(token)
    return (match.group(1), match.group(2)) if match else None


def looks_like_key(token: str | bytes) -> bool:
    """A token that starts like a key (well-formed or not): it is judged as a key, never as the env token."""
    start = token[:len(PREFIX)]
    return (start.decode("ascii", "replace") if isinstance(start, bytes) else start) == PREFIX


def secret_hash(salt: str, secret: str) -> str:
    return hashlib.sha256(bytes.fromhex(salt) + secret.encode("ascii")).hexdigest()


def secret_matches(stored_hash: str, salt: str, secret: str) -> bool:
    return hmac.compare_digest(secret_hash(salt, secret).encode("ascii"), stored_hash.encode("ascii"))


def new_key() -> dict[str, str]:
    """A fresh key: `id`, `key` (shown once), and what is stored: `salt` and `secret_hash`."""
    key_id, secret, salt = secrets.token_hex(6), secrets.token_hex(32), secrets.token_hex(16)
    return {"id": key_id, "key": f"{PREFIX}{key_id}_{secret}", "salt": salt, "secret_hash": secret_hash(salt, secret)}
