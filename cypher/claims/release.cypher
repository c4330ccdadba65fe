// memory_release (SPEC §12, graphsvc.store.claims): end $arg.agent's lease on the node, under the
// node's write lock (taken first, see claims/take.cypher). Another agent's live lease is left as it
// is and named (`holder`, `lease_until_us`): the caller gets a 409. An expired lease of another
// agent is as if absent. Releasing what one does not hold (any more) changes nothing: idempotent.
// `released`: a live lease of $arg.agent ended here.
//
// Parameters: $arg.id, $arg.agent, $arg.now (the request clock).
MATCH (c:Capsule {id: $arg.id})
USING INDEX SEEK c:Capsule(id)
SET c.claim_lock = true
REMOVE c.claim_lock
WITH c, c.lease_agent AS holder, c.lease_until AS until
WITH c, holder, until, holder IS NOT NULL AND until > $arg.now AS live
FOREACH (own IN CASE WHEN holder = $arg.agent THEN [true] ELSE [] END |
  REMOVE c.lease_agent, c.lease_until, c.lease_key)
RETURN CASE WHEN live AND holder <> $arg.agent THEN holder END AS holder,
       CASE WHEN live THEN until.epochSeconds * 1000000 + until.microsecond END AS lease_until_us,
       live AND holder = $arg.agent AS released
