// list: one fenced, filtered page in seq order after the cursor (keyset pagination: stable under inserts).
// Fence (SPEC §2): exact project_id and/or subtree prefix ("nott" covers "nott" and "nott/x", never "nottx").
// $arg.scope: a scoped API key's prefixes when the request has no fence (null: none), subtree rule each.
// $arg.limit is the page size + 1 so the caller knows whether another page follows.
MATCH (c:Capsule)
WHERE c.seq > $arg.after
  AND ($arg.project_id IS NULL OR c.project_id = $arg.project_id)
  AND ($arg.project_prefix IS NULL OR c.project_id = $arg.project_prefix
       OR c.project_id STARTS WITH $arg.project_prefix + '/')
  AND ($arg.scope IS NULL OR any(p IN $arg.scope WHERE c.project_id = p OR c.project_id STARTS WITH p + '/'))
  AND ($arg.kind IS NULL OR c.kind = $arg.kind)
  AND ($arg.tier IS NULL OR c.tier = $arg.tier)
  AND ($arg.status IS NULL OR c.status = $arg.status)
  AND c.tombstoned_at IS NULL  // SPEC §1: only memory_get shows tombstoned capsules
WITH c ORDER BY c.seq ASC LIMIT $arg.limit
RETURN properties(c) AS props,
       COLLECT { MATCH (c)-[r:BLOCKS|SUPERSEDES]->(o:Capsule)
                 RETURN {type: type(r), id: o.id, project_id: o.project_id} ORDER BY type(r), o.seq } AS outgoing,
       COLLECT { MATCH (c)<-[r:BLOCKS|SUPERSEDES]-(o:Capsule)
                 RETURN {type: type(r), id: o.id, project_id: o.project_id} ORDER BY type(r), o.seq } AS incoming,
       EXISTS { MATCH (c)<-[:SUPERSEDES]-(n:Capsule) WHERE n.tombstoned_at IS NULL } AS superseded
