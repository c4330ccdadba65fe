// memory_claim (SPEC §12, graphsvc.store.claims): lease one task or epic to $arg.agent until $arg.until.
//
// Race-free through Neo4j's own locking: the first SET takes the node's write lock, held until the
// transaction ends, and everything after it reads the node as the last committed claimer left it,
// so of two claimers of one node the second sees the first's lease and is refused (`held`). The
// look before the lock skips a node whose committed state already refuses the claim (a lease of
// another agent, a done node) without waiting for or keeping its lock: a claimer that moves on
// from a taken node does not hold up the next claimer of it.
//
// Only a claimer that holds the lock writes. A read without a lock may meet a node whose commit
// is being applied (its lease_agent already there, its lease_until not yet): that look decides
// nothing (null is not hopeless, so the lock is taken). And a node found hopeless first and free
// on the second read (released or finished blocking meanwhile) is not taken on that unlocked
// read: it is answered `changed`, and graphsvc.store.claims runs the statement again.
//
// `refused` names why the node cannot be claimed now (null: it was): `done`; `not_ready` (not a
// task or epic, tombstoned, superseded, expired, or blocked: the maintained `ready` is not true);
// `held` (a live lease of another agent: `holder` and `lease_until_us` say whose and until when);
// `changed` (see above). `renewed`: the node was already under a live lease of $arg.agent.
//
// Parameters: $arg.id, $arg.agent, $arg.now (the request clock), $arg.until (the new lease's end),
// $arg.key (the API key id that claims, or null).
MATCH (c:Capsule {id: $arg.id})
USING INDEX SEEK c:Capsule(id)
WITH c, c.lease_agent IS NOT NULL AND c.lease_until > $arg.now AND c.lease_agent <> $arg.agent AS taken
WITH c, coalesce(taken OR c.status = 'done' OR c.ready IS NULL, false) AS hopeless
CALL (c, hopeless) {
  WITH c WHERE NOT hopeless
  SET c.claim_lock = true
  REMOVE c.claim_lock
}
// The node again under a fresh name: the decision must read it as it is now that the lock is
// held, never a property value the planner cached for the check above.
WITH c.id AS id, hopeless
MATCH (c:Capsule {id: id})
USING INDEX SEEK c:Capsule(id)
WITH c, hopeless, c.lease_agent IS NOT NULL AND c.lease_until > $arg.now AS live
WITH c, hopeless, live AND c.lease_agent = $arg.agent AS renewed,
     CASE WHEN c.status = 'done' THEN 'done'
          WHEN c.ready IS NULL OR NOT c.ready OR (c.valid_to IS NOT NULL AND c.valid_to <= $arg.now) THEN 'not_ready'
          WHEN live AND c.lease_agent <> $arg.agent THEN 'held'
          WHEN hopeless THEN 'changed' END AS refused
FOREACH (take IN CASE WHEN refused IS NULL THEN [true] ELSE [] END |
  SET c.lease_agent = $arg.agent, c.lease_until = $arg.until, c.lease_key = $arg.key)
RETURN c.id AS id, c.headline AS headline, c.project_id AS project_id, refused, renewed,
       c.lease_agent AS holder, c.lease_until.epochSeconds * 1000000 + c.lease_until.microsecond AS lease_until_us
