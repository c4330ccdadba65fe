// Import: which of these ids are already stored (import refuses to overwrite anything).
UNWIND $arg.ids AS wanted
MATCH (c:Capsule {id: wanted})
USING INDEX SEEK c:Capsule(id)
RETURN c.id AS id
