// Idempotency: delete at most $limit expired keys (the index on expires_at makes this a range seek).
// Run after each keyed write in its own small transaction, so the store never grows without bound
// and no single clean-up is ever large.
MATCH (k:IdempotencyKey)
WHERE k.expires_at <= $now
WITH k LIMIT $limit
DELETE k
RETURN count(*) AS purged
