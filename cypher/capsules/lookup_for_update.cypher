// What an update needs to decide: the kind, whether it is tombstoned, and the current headline/content.
// The node's write lock is taken first, so two concurrent updates of one capsule see each other's
// text (the folded tokens are computed from it) and an update cannot race past a tombstone.
MATCH (c:Capsule {id: $arg.id})
USING INDEX SEEK c:Capsule(id)
SET c.maintained_lock = true
REMOVE c.maintained_lock
RETURN c.kind AS kind, c.tombstoned_at AS tombstoned_at, c.headline AS headline, c.content AS content,
       c.project_id AS project_id
