// Idempotency: take the key's node for this write transaction, creating it when it is new.
// MERGE on the uniquely-constrained (caller, key) pair locks the entry: a second request with
// the same key waits here until the first commits (it then sees the stored result) or rolls back
// (it then creates the node itself). The SET takes the node's write lock even when it already
// exists, so two retries of an EXPIRED key cannot both run. A replay rolls this back.
MERGE (k:IdempotencyKey {caller: $arg.caller, key: $arg.key})
SET k.claimed_at = $arg.now
RETURN k.request_hash AS request_hash, k.operation AS operation, k.status AS status,
       k.response AS response, k.created_at AS created_at,
       coalesce(k.expires_at > $arg.now, false) AS live
