// Mark capsules tombstoned (never delete). coalesce keeps the FIRST tombstoned_at: idempotent.
// The node's write lock is taken before `already` is read: of two requests tombstoning one capsule
// at once, the second waits for the first and reports it as already tombstoned (a read before the
// lock would have both report it as newly tombstoned).
UNWIND $arg.ids AS wanted
MATCH (c:Capsule {id: wanted})
USING INDEX SEEK c:Capsule(id)
SET c.tombstone_lock = true
REMOVE c.tombstone_lock
WITH c
WITH c, c.tombstoned_at IS NOT NULL AS already
SET c.tombstoned_at = coalesce(c.tombstoned_at, $arg.now)
RETURN c.id AS id, already
