// The capsules the given ones block (their readiness depends on whether these still block).
UNWIND $ids AS wanted
MATCH (:Capsule {id: wanted})-[:BLOCKS]->(t:Capsule)
RETURN DISTINCT t.id AS id
