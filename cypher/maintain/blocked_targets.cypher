// The capsules the given ones block (their readiness depends on whether these still block).
UNWIND $arg.ids AS wanted
MATCH (c:Capsule {id: wanted})-[:BLOCKS]->(t:Capsule)
USING INDEX SEEK c:Capsule(id)
RETURN DISTINCT t.id AS id
