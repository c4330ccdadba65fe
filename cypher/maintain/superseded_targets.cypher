// The capsules the given ones supersede (their `superseded` depends on these being live).
UNWIND $ids AS wanted
MATCH (:Capsule {id: wanted})-[:SUPERSEDES]->(t:Capsule)
RETURN DISTINCT t.id AS id
