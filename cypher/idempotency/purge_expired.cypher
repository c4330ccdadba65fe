// Idempotency: delete at most $arg.limit expired keys (the index on expires_at makes this a range seek).
// Run after each keyed write in its own small transaction, so the store never grows without bound
// and no single clean-up is ever large.
// The SET takes each key's write lock before the delete decides: a write that is re-recording an
// expired key (a reuse after the TTL) holds that lock, so the purge waits for it to commit and then
// reads expires_at again, keeping the key it just made live instead of deleting its stored result.
// (EXPLAIN: `k.expires_at` here would be `cache[k.expires_at]` from the index seek; the write to k
// happens to invalidate that cache today, `properties(k)` does not depend on it.)
// A key the purge keeps carries purge_checked_at (when a purge last looked at it); nothing reads it.
MATCH (k:IdempotencyKey)
WHERE k.expires_at <= $arg.now
WITH k LIMIT $arg.limit
SET k.purge_checked_at = $arg.now
WITH k
WHERE properties(k).expires_at <= $arg.now  // read from the store: `k.expires_at` may be planned from the seek's cache
DELETE k
RETURN count(*) AS purged
