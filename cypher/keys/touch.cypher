// Record that a key was used: only when its last_used_at is older than $arg.before, so two workers
// touching the same key in the same minute write once.
MATCH (k:ApiKey {id: $arg.id})
USING INDEX SEEK k:ApiKey(id)
WHERE k.last_used_at IS NULL OR k.last_used_at < $arg.before
SET k.last_used_at = $arg.now
