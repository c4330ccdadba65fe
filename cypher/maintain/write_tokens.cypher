// `graphsvc migrate` from schema v3: the folded tokens Python computed for these capsules. The node's
// write lock is taken first, and a capsule whose text changed since it was read is left alone: the
// write that changed it stored its tokens already. Idempotent.
UNWIND $arg.rows AS row
MATCH (c:Capsule {id: row.id})
USING INDEX SEEK c:Capsule(id)
SET c.maintained_lock = true
REMOVE c.maintained_lock
WITH c, row
WHERE c.headline = row.headline AND c.content = row.content
SET c.tokens = row.tokens
