// The capsules the given ones supersede (their `superseded` depends on these being live).
UNWIND $arg.ids AS wanted
MATCH (c:Capsule {id: wanted})-[:SUPERSEDES]->(t:Capsule)
USING INDEX SEEK c:Capsule(id)
RETURN DISTINCT t.id AS id
