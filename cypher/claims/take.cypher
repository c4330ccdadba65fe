// memory_claim (SPEC §12, graphsvc.store.claims): lease one task or epic to $arg.agent until $arg.until.
//
// Race-free through Neo4j's own locking: the first SET takes the node's write lock, held until the
// transaction ends, and everything after it reads the node as the last committed claimer left it,
// so of two claimers of one node the second sees the first's lease and is refused (`held`). The
// WHERE before the lock skips a node whose committed state already refuses the claim (a lease of
// another agent, a done node) without waiting for or keeping its lock: a claimer that moves on
// from a taken node does not hold up the next claimer of it.
//
// `refused` names why the node cannot be claimed now (null: it was): `done`; `not_ready` (not a
// task or epic, tombstoned, superseded, expired, or blocked: the maintained `ready` is not true);
// `held` (a live lease of another agent: `holder` and `lease_until_us` say whose and until when).
// `renewed`: the node was already under a live lease of $arg.agent.
//
// Parameters: $arg.id, $arg.agent, $arg.now (the request clock), $arg.until (the new lease's end),
// $arg.key (the API key id that claims, or null).
MATCH (c:Capsule {id: $arg.id})
USING INDEX SEEK c:Capsule(id)
WITH c, c.lease_agent IS NOT NULL AND c.lease_until > $arg.now AND c.lease_agent <> $arg.agent AS taken
WITH c, taken OR c.status = 'done' OR c.ready IS NULL AS hopeless
CALL (c, hopeless) {
  WITH c WHERE NOT hopeless
  SET c.claim_lock = true
  REMOVE c.claim_lock
}
// The node again under a fresh name: the decision must read it as it is now that the lock is
// held, never a property value the planner cached for the check above.
WITH c.id AS id
MATCH (c:Capsule {id: id})
USING INDEX SEEK c:Capsule(id)
WITH c, c.lease_agent IS NOT NULL AND c.lease_until > $arg.now AS live
WITH c, live AND c.lease_agent = $arg.agent AS renewed,
     CASE WHEN c.status = 'done' THEN 'done'
          WHEN c.ready IS NULL OR NOT c.ready OR (c.valid_to IS NOT NULL AND c.valid_to <= $arg.now) THEN 'not_ready'
          WHEN live AND c.lease_agent <> $arg.agent THEN 'held' END AS refused
FOREACH (take IN CASE WHEN refused IS NULL THEN [true] ELSE [] END |
  SET c.lease_agent = $arg.agent, c.lease_until = $arg.until, c.lease_key = $arg.key)
RETURN c.id AS id, c.headline AS headline, c.project_id AS project_id, refused, renewed,
       c.lease_agent AS holder, c.lease_until.epochSeconds * 1000000 + c.lease_until.microsecond AS lease_until_us
