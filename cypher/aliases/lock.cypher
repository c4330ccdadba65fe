// memory_alias: take (creating it if need be) a term's alias node in one scope, write-locked for the
// rest of the transaction, and return its aliases as stored. aliases/store then writes the new set.
MERGE (a:Alias {key: $arg.key})
ON CREATE SET a.scope = $arg.scope, a.term = $arg.term, a.aliases = []
SET a.alias_lock = true
REMOVE a.alias_lock
RETURN a.aliases AS aliases
