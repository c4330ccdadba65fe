// Mark capsules tombstoned (never delete). coalesce keeps the FIRST tombstoned_at: idempotent.
UNWIND $arg.ids AS wanted
MATCH (c:Capsule {id: wanted})
USING INDEX SEEK c:Capsule(id)
WITH c, c.tombstoned_at IS NOT NULL AS already
SET c.tombstoned_at = coalesce(c.tombstoned_at, $arg.now)
RETURN c.id AS id, already
