// Idempotency: the stored result of a key, read without taking it (import checks first, then writes
// in several transactions and records the key in the last one).
MATCH (k:IdempotencyKey {caller: $arg.caller, key: $arg.key})
RETURN k.request_hash AS request_hash, k.operation AS operation, k.status AS status,
       k.response AS response, k.created_at AS created_at,
       coalesce(k.expires_at > $arg.now, false) AS live
