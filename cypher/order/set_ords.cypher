// Write reordered positions: [{id, ord}].
UNWIND $rows AS row
MATCH (c:Capsule {id: row.id})
SET c.ord = row.ord
