// A new API key (issue 27): the secret is never stored, only its salted hash (graphsvc.core.apikeys).
// $arg.prefixes null = the whole store (the property is then absent).
CREATE (k:ApiKey {id: $arg.id, label: $arg.label, rights: $arg.rights, prefixes: $arg.prefixes,
                  salt: $arg.salt, secret_hash: $arg.secret_hash, created_at: $arg.now})
RETURN k.id AS id
