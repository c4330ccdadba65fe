// memory_digest (SPEC §9): a scope's newest live handoff (SPEC §11: updated_at desc, then the newer id,
// with the agent that left it and its session, which a store restored from an export does not hold),
// counts per kind, its blocked tasks and its newest live capsules, in ONE statement and one row (the ready
// section comes from the pack's own statement, graphsvc.store.digest). Each capsule of the fence counts
// once, under its kind and the first state it is in: tombstoned, superseded (the maintained `superseded`),
// expired (valid_to <= $arg.now), else live. Blocked: open, live tasks/epics that still have open blockers
// (the maintained `open_blockers`), most blockers first, then seq; newest: live capsules by updated_at
// desc, then seq. Only the first $arg.top_blocked / $arg.newest rows leave Neo4j.
// The fence is $arg.seeks (graphsvc.store.digest.fence_seeks): project-id prefixes, each `exact` (that
// project only) or not (every project under it), one seek of the project_id index each; the whole
// store is the one prefix ''. Written as `$arg.project_id IS NULL OR ...` instead, the planner could
// use no index and every digest read every capsule of the store, three times.
CALL () {
  UNWIND $arg.seeks AS seek
  MATCH (c:Capsule)
  USING INDEX c:Capsule(project_id)
  WHERE c.project_id STARTS WITH seek.start AND (NOT seek.exact OR c.project_id = seek.start)
  WITH c.kind AS kind, CASE WHEN c.tombstoned_at IS NOT NULL THEN 'tombstoned'
                            WHEN coalesce(c.superseded, false) THEN 'superseded'
                            WHEN c.valid_to IS NOT NULL AND c.valid_to <= $arg.now THEN 'expired'
                            ELSE 'live' END AS state
  WITH kind, state, count(*) AS n
  RETURN collect({kind: kind, state: state, n: n}) AS counts
}
CALL () {
  UNWIND $arg.seeks AS seek
  MATCH (c:Capsule)
  USING INDEX c:Capsule(status, project_id)
  WHERE c.status = 'open' AND c.project_id STARTS WITH seek.start AND (NOT seek.exact OR c.project_id = seek.start)
    AND coalesce(c.open_blockers, 0) > 0
    AND c.tombstoned_at IS NULL AND NOT coalesce(c.superseded, false)
    AND (c.valid_to IS NULL OR c.valid_to > $arg.now)
  WITH c ORDER BY c.open_blockers DESC, c.seq ASC
  WITH collect(c) AS blocked
  RETURN size(blocked) AS blocked_total,
         [b IN blocked[0..$arg.top_blocked] | b {.id, .project_id, .headline, blockers: b.open_blockers}] AS blocked
}
CALL () {
  UNWIND $arg.seeks AS seek
  MATCH (c:Capsule)
  USING INDEX c:Capsule(project_id)
  WHERE c.project_id STARTS WITH seek.start AND (NOT seek.exact OR c.project_id = seek.start)
    AND c.tombstoned_at IS NULL AND NOT coalesce(c.superseded, false)
    AND (c.valid_to IS NULL OR c.valid_to > $arg.now)
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
RETURN handoffs[0] AS handoff, counts, blocked_total, blocked, newest
