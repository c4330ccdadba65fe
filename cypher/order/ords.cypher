// The order position (`ord`) of task/epic capsules, by id.
UNWIND $arg.ids AS wanted
MATCH (c:Capsule {id: wanted})
USING INDEX SEEK c:Capsule(id)
RETURN c.id AS id, c.ord AS ord
