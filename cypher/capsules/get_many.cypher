// memory_get: full capsules with their edges (in and out) and the superseded flag, ONE query for many ids.
// Ids that do not exist simply produce no row; the caller names them (404).
// superseded = an incoming SUPERSEDES from a capsule that is not tombstoned (SPEC §1).
UNWIND $arg.ids AS wanted
MATCH (c:Capsule {id: wanted})
USING INDEX SEEK c:Capsule(id)
RETURN properties(c) AS props,
       COLLECT { MATCH (c)-[r:BLOCKS|SUPERSEDES]->(o:Capsule)
                 RETURN {type: type(r), id: o.id, project_id: o.project_id} ORDER BY type(r), o.seq } AS outgoing,
       COLLECT { MATCH (c)<-[r:BLOCKS|SUPERSEDES]-(o:Capsule)
                 RETURN {type: type(r), id: o.id, project_id: o.project_id} ORDER BY type(r), o.seq } AS incoming,
       EXISTS { MATCH (c)<-[:SUPERSEDES]-(n:Capsule) WHERE n.tombstoned_at IS NULL } AS superseded
