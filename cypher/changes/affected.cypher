// SPEC §13: the projects whose packs a write to these capsules may change: their own, those of
// the capsules they block (readiness, open-blocker counts), of those they supersede (superseded
// flags: a tombstoned superseder releases them) and of what those block (readiness again).
UNWIND $arg.ids AS wanted
MATCH (c:Capsule {id: wanted})
USING INDEX SEEK c:Capsule(id)
OPTIONAL MATCH (c)-[:SUPERSEDES*0..1]->(:Capsule)-[:BLOCKS*0..1]->(t:Capsule)
WITH collect(DISTINCT c.project_id) + collect(DISTINCT t.project_id) AS found
UNWIND found AS project_id
RETURN DISTINCT project_id
