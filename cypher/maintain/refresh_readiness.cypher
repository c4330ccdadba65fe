// Maintained state (graphsvc.store.maintain), step 2 of 2: readiness of the given capsules,
// recomputed from the graph after step 1 (SPEC §3):
//   open_blockers  task/epic: capsules with a BLOCKS edge into it that still block
//                  (not done, not tombstoned, not superseded)
//   ready          true on a task/epic that is open, not tombstoned, not superseded and has no
//                  open blocker; absent otherwise. Expiry stays a read-time filter (request clock).
// A node that is done, tombstoned or superseded loses its lease (SPEC §12: that ends the claim);
// every write that changes one of those refreshes the node here.
// The lock is taken before the values are computed (see refresh_superseded).
UNWIND $arg.ids AS wanted
MATCH (c:Capsule {id: wanted})
USING INDEX SEEK c:Capsule(id)
SET c.maintained_lock = true
REMOVE c.maintained_lock
WITH c
WITH c, CASE WHEN c.kind IN ['task', 'epic'] THEN COUNT {
  MATCH (x:Capsule)-[:BLOCKS]->(c)
  WHERE x.tombstoned_at IS NULL
    AND coalesce(x.status, 'open') <> 'done'
    AND NOT EXISTS { MATCH (s:Capsule)-[:SUPERSEDES]->(x) WHERE s.tombstoned_at IS NULL }
} END AS open_blockers
SET c.open_blockers = open_blockers,
    c.ready = CASE WHEN c.kind IN ['task', 'epic'] AND c.status = 'open' AND c.tombstoned_at IS NULL
                        AND NOT c.superseded AND open_blockers = 0 THEN true END
FOREACH (ended IN CASE WHEN c.lease_agent IS NOT NULL
                        AND (c.status = 'done' OR c.tombstoned_at IS NOT NULL OR c.superseded) THEN [true] ELSE [] END |
  REMOVE c.lease_agent, c.lease_until, c.lease_key)
