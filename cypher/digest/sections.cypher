// memory_digest (SPEC §9), schema v6: a scope's newest live handoff, its census, its top blocked tasks
// and its newest live capsules, in ONE statement and one row (the ready section comes from the pack's
// own statements, graphsvc.store.digest). It reads the state the writes maintain
// (graphsvc.store.maintain) so that its cost follows the fence's projects and the rows it shows, not
// the fence's capsules:
//   * `census`: the fence's census tallies (:CensusTally), per project and '<kind>:<state>'
//     (tombstoned, superseded, blocked, current), and `expired`: the fence's blocked and current capsules whose valid_to has
//     passed by $arg.now, per census value, sought through the (project_id, valid_to) index. Python
//     turns them into SPEC §9's counts (each capsule once, in its first state) and blocked_total;
//   * blocked: per blocked census tally of the fence, its most blocked capsules, read in order from
//     the (census, project_id, open_blockers) index (open_blockers desc, then seq), not expired; the
//     first $arg.top_blocked of those;
//   * newest: per project of the fence holding blocked or current capsules, its newest, read in order from the
//     (project_id, updated_at) index (updated_at desc, then seq), live ones only; the first
//     $arg.newest of those. The top k of the union of each project's top k is the fence's top k.
// The fence is $arg.seeks (graphsvc.store.digest.fence_seeks): project-id prefixes, each `exact` (that
// project only) or not (every project under it), one seek per prefix; the whole store is the one
// prefix ''. The index hints pin the plan whatever the statistics say; Neo4j refuses a statement whose
// hint it cannot follow, so every digest test runs them.
// The validity filter on the ordered seeks is a coalesce, not the equivalent OR, which the planner
// may plan as a union of two seeks that loses the index's order (docs/design.md, the section floor).
CALL () {
  UNWIND $arg.seeks AS seek
  MATCH (t:CensusTally) USING INDEX SEEK t:CensusTally(project_id)
  WHERE t.project_id STARTS WITH seek.start AND (NOT seek.exact OR t.project_id = seek.start)
    AND t.listed > 0
  RETURN collect({census: t.section, project_id: t.project_id, n: t.listed}) AS census
}
CALL () {
  UNWIND $arg.seeks AS seek
  MATCH (c:Capsule) USING INDEX SEEK c:Capsule(project_id, valid_to)
  WHERE c.project_id STARTS WITH seek.start AND (NOT seek.exact OR c.project_id = seek.start)
    AND c.valid_to <= $arg.now AND (c.census ENDS WITH ':current' OR c.census ENDS WITH ':blocked')
  WITH c.census AS census, count(*) AS n
  RETURN collect({census: census, n: n}) AS expired
}
CALL (census) {
  UNWIND [t IN census WHERE t.census ENDS WITH ':blocked'] AS t
  CALL (t) {
    MATCH (c:Capsule) USING INDEX SEEK c:Capsule(census, project_id, open_blockers)
    WHERE c.census = t.census AND c.project_id = t.project_id AND c.open_blockers > 0
      AND coalesce(c.valid_to > $arg.now, c.valid_to IS NULL)
    WITH c ORDER BY c.census DESC, c.project_id DESC, c.open_blockers DESC, c.seq ASC
    LIMIT $arg.top_blocked
    RETURN c
  }
  WITH c ORDER BY c.open_blockers DESC, c.seq ASC
  LIMIT $arg.top_blocked
  RETURN collect(c {.id, .project_id, .headline, blockers: c.open_blockers}) AS blocked
}
CALL (census) {
  UNWIND [t IN census WHERE t.census ENDS WITH ':current' OR t.census ENDS WITH ':blocked' | t.project_id] AS p
  WITH DISTINCT p
  CALL (p) {
    MATCH (c:Capsule) USING INDEX SEEK c:Capsule(project_id, updated_at)
    WHERE c.project_id = p AND c.updated_at IS NOT NULL
      AND c.tombstoned_at IS NULL AND NOT coalesce(c.superseded, false)
      AND coalesce(c.valid_to > $arg.now, c.valid_to IS NULL)
    WITH c ORDER BY c.project_id DESC, c.updated_at DESC, c.seq ASC
    LIMIT $arg.newest
    RETURN c
  }
  WITH c ORDER BY c.updated_at DESC, c.seq ASC
  LIMIT $arg.newest
  RETURN collect(c {.id, .kind, .project_id, .headline,
                    updated_us: c.updated_at.epochSeconds * 1000000 + c.updated_at.microsecond}) AS newest
}
CALL () {
  UNWIND $arg.seeks AS seek
  MATCH (h:Handoff)
  WHERE h.project_id STARTS WITH seek.start AND (NOT seek.exact OR h.project_id = seek.start)
    AND h.tombstoned_at IS NULL AND NOT coalesce(h.superseded, false)
    AND (h.valid_to IS NULL OR h.valid_to > $arg.now)
  WITH h ORDER BY h.updated_at DESC, h.seq DESC
  LIMIT 1
  OPTIONAL MATCH (s:Session)-[:HANDED_OFF]->(h)
  RETURN collect(h {.id, .project_id, .headline, .content, .agent, session_id: s.id,
                    updated_us: h.updated_at.epochSeconds * 1000000 + h.updated_at.microsecond}) AS handoffs
}
RETURN handoffs[0] AS handoff, census, expired, blocked, newest
