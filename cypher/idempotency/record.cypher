// Idempotency: store the write's result with its key, in the same transaction as the write.
// MERGE (not MATCH): import records its key in its last chunk's transaction without a claim first.
MERGE (k:IdempotencyKey {caller: $caller, key: $key})
SET k.operation = $operation,
    k.request_hash = $request_hash,
    k.status = $status,
    k.response = $response,
    k.created_at = $now,
    k.claimed_at = $now,
    k.expires_at = $expires_at
