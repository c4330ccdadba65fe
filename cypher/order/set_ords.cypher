// Write reordered positions: [{id, ord}].
UNWIND $arg.rows AS row
MATCH (c:Capsule {id: row.id})
USING INDEX SEEK c:Capsule(id)
SET c.ord = row.ord
