// One API key by id, for checking a presented key (graphsvc.keyring); no row when there is none.
MATCH (k:ApiKey {id: $arg.id})
USING INDEX SEEK k:ApiKey(id)
RETURN k.id AS id, k.label AS label, k.rights AS rights, k.prefixes AS prefixes, k.salt AS salt,
       k.secret_hash AS secret_hash, k.revoked_at AS revoked_at, k.last_used_at AS last_used_at
