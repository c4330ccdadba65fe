// memory_bootstrap read side (SPEC §3, §4): the four candidate sets of one pack, with EXACT totals.
// One statement, one row. Python (graphsvc.bootstrap) ranks, caps and budgets these rows.
//
// Parameters:
//   $project_id, $project_prefix  SPEC §2 fences; null = no fence (both given = AND). The extra
//                                 `STARTS WITH coalesce(...)` is implied by them and lets the planner
//                                 seek the (kind, project_id) index instead of scanning every capsule.
//   $now                          the request clock (expired = valid_to <= $now)
//   $top_ready, $top_section      how many rows each ranked section can show (next action + cap, cap)
//   $tokens                       the request's distinct term tokens, [] without terms
//
// Lean transfer: rows are listed in decay order (updated_at clamped to $now desc, then seq asc), which is
// exactly the ranking order when coverage ties, so the first $top_* rows are all a terms-free pack can show.
// (updated_at is truncated to microseconds like the driver's Python datetime, so both orders agree exactly.)
// With terms, a row outside that prefix is also sent when it MIGHT cover a term token (`hit`): its lowered
// text contains a token, or contains a non-ASCII character (Python's Unicode folding could turn it into one).
// A row without a hit has coverage 0 for sure and is beaten by the prefix, so Python's ranking is exact.
// Constraints are never capped: all of them are sent.
CALL () {
  MATCH (c:Capsule {kind: 'constraint'})
  WHERE c.project_id STARTS WITH coalesce($project_id, $project_prefix, '')  // seeks the (kind, project_id) index
    AND ($project_id IS NULL OR c.project_id = $project_id)
    AND ($project_prefix IS NULL OR c.project_id = $project_prefix OR c.project_id STARTS WITH $project_prefix + '/')
    AND c.tier = 'active'
    AND c.tombstoned_at IS NULL
    AND (c.valid_to IS NULL OR c.valid_to > $now)
    AND NOT EXISTS { MATCH (s:Capsule)-[:SUPERSEDES]->(c) WHERE s.tombstoned_at IS NULL }
  RETURN collect(c {.id, .project_id, .headline, .content, .updated_at, .tier, superseded: false}) AS constraints
}
CALL () {
  MATCH (c:Capsule {kind: 'decision'})
  WHERE c.project_id STARTS WITH coalesce($project_id, $project_prefix, '')  // seeks the (kind, project_id) index
    AND ($project_id IS NULL OR c.project_id = $project_id)
    AND ($project_prefix IS NULL OR c.project_id = $project_prefix OR c.project_id STARTS WITH $project_prefix + '/')
    AND c.tombstoned_at IS NULL
    AND (c.valid_to IS NULL OR c.valid_to > $now)
    AND NOT EXISTS { MATCH (s:Capsule)-[:SUPERSEDES]->(c) WHERE s.tombstoned_at IS NULL }
  WITH c, false AS superseded
  ORDER BY CASE WHEN c.updated_at > $now THEN $now ELSE datetime.truncate('microsecond', c.updated_at) END DESC, c.seq ASC
  WITH collect(c) AS ordered, collect(superseded) AS flags
  RETURN size(ordered) AS decisions_total,
         [i IN range(0, size(ordered) - 1)
          WHERE i < $top_section
             OR (size($tokens) > 0 AND (
                   toLower(ordered[i].headline + ' ' + ordered[i].content) =~ '(?s).*[^\\x00-\\x7F].*'
                   OR any(t IN $tokens WHERE toLower(ordered[i].headline + ' ' + ordered[i].content) CONTAINS t)))
          | {id: ordered[i].id, project_id: ordered[i].project_id, headline: ordered[i].headline,
             content: ordered[i].content, updated_at: ordered[i].updated_at, tier: ordered[i].tier,
             superseded: flags[i]}]
         AS decisions
}
CALL () {
  MATCH (c:Capsule {kind: 'failure_pattern'})
  WHERE c.project_id STARTS WITH coalesce($project_id, $project_prefix, '')  // seeks the (kind, project_id) index
    AND ($project_id IS NULL OR c.project_id = $project_id)
    AND ($project_prefix IS NULL OR c.project_id = $project_prefix OR c.project_id STARTS WITH $project_prefix + '/')
    AND c.tombstoned_at IS NULL
  // Stale and superseded traps stay: each row carries its own tier and superseded marker.
  WITH c, EXISTS { MATCH (s:Capsule)-[:SUPERSEDES]->(c) WHERE s.tombstoned_at IS NULL } AS superseded
  ORDER BY CASE WHEN c.updated_at > $now THEN $now ELSE datetime.truncate('microsecond', c.updated_at) END DESC, c.seq ASC
  WITH collect(c) AS ordered, collect(superseded) AS flags
  RETURN size(ordered) AS traps_total,
         [i IN range(0, size(ordered) - 1)
          WHERE i < $top_section
             OR (size($tokens) > 0 AND (
                   toLower(ordered[i].headline + ' ' + ordered[i].content) =~ '(?s).*[^\\x00-\\x7F].*'
                   OR any(t IN $tokens WHERE toLower(ordered[i].headline + ' ' + ordered[i].content) CONTAINS t)))
          | {id: ordered[i].id, project_id: ordered[i].project_id, headline: ordered[i].headline,
             content: ordered[i].content, updated_at: ordered[i].updated_at, tier: ordered[i].tier,
             superseded: flags[i]}]
         AS traps
}
CALL () {
  // SPEC §3 ready: a fenced, live task/epic whose every blocker (fenced or not) is done, tombstoned or superseded.
  MATCH (c:Capsule)
  WHERE c.kind IN ['task', 'epic']
    AND c.project_id STARTS WITH coalesce($project_id, $project_prefix, '')
    AND ($project_id IS NULL OR c.project_id = $project_id)
    AND ($project_prefix IS NULL OR c.project_id = $project_prefix OR c.project_id STARTS WITH $project_prefix + '/')
    AND c.status = 'open'
    AND c.tombstoned_at IS NULL
    AND (c.valid_to IS NULL OR c.valid_to > $now)
    AND NOT EXISTS { MATCH (s:Capsule)-[:SUPERSEDES]->(c) WHERE s.tombstoned_at IS NULL }
    AND NOT EXISTS {
      MATCH (blocker:Capsule)-[:BLOCKS]->(c)
      WHERE blocker.tombstoned_at IS NULL
        AND coalesce(blocker.status, 'open') <> 'done'
        AND NOT EXISTS { MATCH (s:Capsule)-[:SUPERSEDES]->(blocker) WHERE s.tombstoned_at IS NULL }
    }
  WITH c, false AS superseded
  ORDER BY CASE WHEN c.updated_at > $now THEN $now ELSE datetime.truncate('microsecond', c.updated_at) END DESC, c.seq ASC
  WITH collect(c) AS ordered, collect(superseded) AS flags
  RETURN size(ordered) AS ready_total,
         [i IN range(0, size(ordered) - 1)
          WHERE i < $top_ready
             OR (size($tokens) > 0 AND (
                   toLower(ordered[i].headline + ' ' + ordered[i].content) =~ '(?s).*[^\\x00-\\x7F].*'
                   OR any(t IN $tokens WHERE toLower(ordered[i].headline + ' ' + ordered[i].content) CONTAINS t)))
          | {id: ordered[i].id, project_id: ordered[i].project_id, headline: ordered[i].headline,
             content: ordered[i].content, updated_at: ordered[i].updated_at, tier: ordered[i].tier,
             superseded: flags[i]}]
         AS ready
}
RETURN constraints, size(constraints) AS constraints_total,
       ready, ready_total, decisions, decisions_total, traps, traps_total
