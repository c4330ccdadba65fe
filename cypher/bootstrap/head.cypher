// memory_bootstrap read side (SPEC §2-§4), schema v4: the first of a pack's two statements, for
// every shape of request (no fence, project_id, project_prefix, both). It reads the state the
// writes maintain (graphsvc.store.maintain) instead of recomputing it, so its cost follows the
// fence's projects, not its capsules:
//   * totals are exact: the fence's maintained per-project tallies, less the listed capsules that have
//     expired by $arg.now (sought per project through the (counted, project_id, valid_to) index);
//   * the fence's projects holding listed capsules (`fence_projects`): where the ranked sections
//     read (bootstrap/sections_fenced.cypher, bootstrap/sections_store.cypher);
//   * "no cycle" is proven by looking up the fence's live BLOCKS edges marked `closes_loop` (the
//     writes keep a topological order in which every cycle has one); only a fence holding one
//     sends its live edges for graphsvc.core.cycles to name the canonical cycle.
// A pack is two statements in one read transaction (graphsvc.store.bootstrap.read_inputs) rather
// than one, so that each is small enough for Neo4j to plan in a fraction of a second: planning cost
// grows with a statement's size, and a freshly started Neo4j plans each statement before its first
// answer (the one statement it replaces took 1.1-1.9 s to plan on a 2-core machine).
//
// Parameters:
//   $arg.project_id, $arg.project_prefix  SPEC §2 fences; null = no fence (both given = AND). The extra
//                                 `STARTS WITH coalesce(...)` is implied by them and lets the planner
//                                 seek the index by prefix instead of scanning every capsule.
//   $arg.scope                        a scoped API key's project prefixes (disjoint: graphsvc.access.normal_prefixes)
//                                 when the request has no fence, each with the subtree rule, the pack
//                                 covering their union (docs/keys.md); null = no key scope. The tallies
//                                 are sought per prefix, so the seek stays a prefix seek.
//   $arg.now                          the request clock (expired = valid_to <= $arg.now)
//   $arg.agent                        who asks (SPEC §12), or null: live leases of others leave the ready set
//   $arg.tokens, $arg.term_sets, $arg.whole_weight   the request's terms (graphsvc.store.bootstrap.term_parameters),
//                                 to score the caller's own held rows as the section statements score theirs
// The index hints pin the plan whatever the statistics say (tests/integration/test_bootstrap_plan.py).
CALL () {
// Totals (SPEC §4 `total`): the fence's maintained per-project tallies (graphsvc.store.maintain),
// so their cost follows the fence's projects, not its capsules; then, since expiry belongs to the
// request clock, the listed capsules that have expired are sought and taken off.
  UNWIND coalesce($arg.scope, [coalesce($arg.project_id, $arg.project_prefix, '')]) AS seek
  MATCH (t:Tally) USING INDEX SEEK t:Tally(project_id)
  WHERE t.project_id STARTS WITH seek
    AND ($arg.scope IS NULL OR t.project_id = seek OR t.project_id STARTS WITH seek + '/')
    AND ($arg.project_id IS NULL OR t.project_id = $arg.project_id)
    AND ($arg.project_prefix IS NULL OR t.project_id = $arg.project_prefix OR t.project_id STARTS WITH $arg.project_prefix + '/')
  RETURN sum(CASE t.section WHEN 'constraints' THEN t.listed ELSE 0 END) AS constraints_listed,
         sum(CASE t.section WHEN 'decisions' THEN t.listed ELSE 0 END) AS decisions_listed,
         sum(CASE t.section WHEN 'traps' THEN t.listed ELSE 0 END) AS traps_total,
         sum(CASE t.section WHEN 'ready' THEN t.listed ELSE 0 END) AS ready_listed,
         // the fence's projects holding listed capsules: where its ranked sections read
         collect(DISTINCT CASE WHEN t.listed > 0 THEN t.project_id END) AS fence_projects
}
CALL (fence_projects) {
  // Traps are listed whatever their valid_to, the other three sections drop expired capsules: per
  // project of the fence (a listed capsule's project has a tally with listed > 0), so the cost is
  // the fence's expired-but-listed capsules, not the store's.
  UNWIND fence_projects AS p
  MATCH (c:Capsule) USING INDEX SEEK c:Capsule(counted, project_id, valid_to)
  WHERE c.counted IN ['constraints', 'decisions', 'ready'] AND c.project_id = p AND c.valid_to <= $arg.now
  RETURN sum(CASE c.counted WHEN 'constraints' THEN 1 ELSE 0 END) AS constraints_expired,
         sum(CASE c.counted WHEN 'decisions' THEN 1 ELSE 0 END) AS decisions_expired,
         sum(CASE c.counted WHEN 'ready' THEN 1 ELSE 0 END) AS ready_expired
}
CALL () {
  // Fail closed (SPEC §3): a live cycle in the fence must contain a live, fenced BLOCKS edge marked
  // `closes_loop`. Live = open, not tombstoned, not superseded.
  OPTIONAL MATCH (a:Capsule)-[r:BLOCKS {closes_loop: true}]->(b:Capsule) USING INDEX SEEK r:BLOCKS(closes_loop)
  WHERE a.status = 'open' AND a.tombstoned_at IS NULL AND a.superseded = false
    AND b.status = 'open' AND b.tombstoned_at IS NULL AND b.superseded = false
    AND ($arg.project_id IS NULL OR (a.project_id = $arg.project_id AND b.project_id = $arg.project_id))
    AND ($arg.project_prefix IS NULL OR ((a.project_id = $arg.project_prefix OR a.project_id STARTS WITH $arg.project_prefix + '/')
                                 AND (b.project_id = $arg.project_prefix OR b.project_id STARTS WITH $arg.project_prefix + '/')))
    AND ($arg.scope IS NULL OR (any(p IN $arg.scope WHERE a.project_id = p OR a.project_id STARTS WITH p + '/')
                                AND any(p IN $arg.scope WHERE b.project_id = p OR b.project_id STARTS WITH p + '/')))
  RETURN count(r) AS loop_edges
}
CALL (loop_edges) {
  // Only then: the fence's live edges as [target seq, [live source seqs]] for graphsvc.core.cycles.
  UNWIND CASE WHEN loop_edges > 0 THEN [true] ELSE [] END AS search
  MATCH (t:Capsule) USING INDEX SEEK t:Capsule(status, project_id)
  WHERE t.status = 'open'
    AND t.project_id STARTS WITH coalesce($arg.project_id, $arg.project_prefix, '')
    AND ($arg.project_id IS NULL OR t.project_id = $arg.project_id)
    AND ($arg.project_prefix IS NULL OR t.project_id = $arg.project_prefix OR t.project_id STARTS WITH $arg.project_prefix + '/')
    AND ($arg.scope IS NULL OR any(p IN $arg.scope WHERE t.project_id = p OR t.project_id STARTS WITH p + '/'))
    AND t.tombstoned_at IS NULL AND t.superseded = false
  WITH t, COLLECT {
    MATCH (x:Capsule)-[:BLOCKS]->(t)
    WHERE x.status = 'open' AND x.tombstoned_at IS NULL AND x.superseded = false
      AND ($arg.project_id IS NULL OR x.project_id = $arg.project_id)
      AND ($arg.project_prefix IS NULL OR x.project_id = $arg.project_prefix OR x.project_id STARTS WITH $arg.project_prefix + '/')
      AND ($arg.scope IS NULL OR any(p IN $arg.scope WHERE x.project_id = p OR x.project_id STARTS WITH p + '/'))
    RETURN x.seq
  } AS live_sources
  WHERE size(live_sources) > 0
  RETURN collect([t.seq, live_sources]) AS live_blocked_by
}
CALL () {
  // Claims (SPEC §12): the live leases on the fence's ready work (listed in 'ready', not expired),
  // found through the lease_until index, so the cost is the store's live leases (few), not the
  // fence. Others' leases leave the ready set (counted, and the section statements skip every live
  // lease); the caller's own come back as rows, to be shown first.
  MATCH (c:Capsule) USING INDEX SEEK c:Capsule(lease_until)
  WHERE c.lease_until > $arg.now AND c.counted = 'ready' AND (c.valid_to IS NULL OR c.valid_to > $arg.now)
    AND c.project_id STARTS WITH coalesce($arg.project_id, $arg.project_prefix, '')
    AND ($arg.project_id IS NULL OR c.project_id = $arg.project_id)
    AND ($arg.project_prefix IS NULL OR c.project_id = $arg.project_prefix OR c.project_id STARTS WITH $arg.project_prefix + '/')
    AND ($arg.scope IS NULL OR any(p IN $arg.scope WHERE c.project_id = p OR c.project_id STARTS WITH p + '/'))
  WITH c, $arg.agent IS NOT NULL AND c.lease_agent = $arg.agent AS own
  WITH c, own, CASE WHEN own THEN [t IN $arg.tokens WHERE t IN c.tokens] ELSE [] END AS hit
  RETURN sum(CASE WHEN own THEN 0 ELSE 1 END) AS held_by_others,
         collect(CASE WHEN own THEN c {.id, .project_id, .headline, .content, .tier, .superseded,
                    updated_us: c.updated_at.epochSeconds * 1000000 + c.updated_at.microsecond,
                    lease_until_us: c.lease_until.epochSeconds * 1000000 + c.lease_until.microsecond,
                    score: size([ts IN $arg.term_sets WHERE all(t IN ts WHERE t IN hit)]) * $arg.whole_weight + size(hit)}
                  END) AS held
}
RETURN constraints_listed - constraints_expired AS constraints_total,
       ready_listed - ready_expired - held_by_others AS ready_total, held_by_others, held,
       decisions_listed - decisions_expired AS decisions_total, traps_total, fence_projects, loop_edges, live_blocked_by
