// Revoke a key; idempotent (the first revoked_at is kept). No row: no such key.
MATCH (k:ApiKey {id: $arg.id})
USING INDEX SEEK k:ApiKey(id)
WITH k, k.revoked_at IS NOT NULL AS already
SET k.revoked_at = coalesce(k.revoked_at, $arg.now)
RETURN k.id AS id, k.label AS label, k.rights AS rights, k.prefixes AS prefixes, k.created_at AS created_at,
       k.revoked_at AS revoked_at, k.last_used_at AS last_used_at, already
