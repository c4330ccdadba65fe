// Idempotency: store the write's result with its key, in the same transaction as the write.
// MERGE (not MATCH): import records its key in its last chunk's transaction without a claim first.
MERGE (k:IdempotencyKey {caller: $arg.caller, key: $arg.key})
SET k.operation = $arg.operation,
    k.request_hash = $arg.request_hash,
    k.status = $arg.status,
    k.response = $arg.response,
    k.created_at = $arg.now,
    k.claimed_at = $arg.now,
    k.expires_at = $arg.expires_at
