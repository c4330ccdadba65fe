// Every API key, oldest first (id breaks ties); never the salt or hash.
MATCH (k:ApiKey)
RETURN k.id AS id, k.label AS label, k.rights AS rights, k.prefixes AS prefixes, k.created_at AS created_at,
       k.revoked_at AS revoked_at, k.last_used_at AS last_used_at
ORDER BY k.created_at, k.id
