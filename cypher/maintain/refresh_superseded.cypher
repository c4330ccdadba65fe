// Maintained state (graphsvc.store.maintain), step 1 of 2: `superseded` of the given capsules,
// recomputed from the graph (SPEC §1: an incoming SUPERSEDES from a capsule that is not tombstoned).
// The first SET takes the node's write lock BEFORE the value is computed, so the last writer of
// a node always computes it from committed state (see graphsvc.store.maintain).
// Returns the capsules these ones block: whether a blocker is superseded changes whether it blocks.
UNWIND $arg.ids AS wanted
MATCH (c:Capsule {id: wanted})
USING INDEX SEEK c:Capsule(id)
SET c.maintained_lock = true
REMOVE c.maintained_lock
WITH c
SET c.superseded = EXISTS { MATCH (s:Capsule)-[:SUPERSEDES]->(c) WHERE s.tombstoned_at IS NULL }
WITH c
MATCH (c)-[:BLOCKS]->(t:Capsule)
RETURN DISTINCT t.id AS id
