// The schema-v1 pack read, kept as the ORACLE of schema v2: it recomputes readiness, supersession and
// the cycle check from the raw graph on every read, reading none of the maintained fields. The
// stateful property test (tests/integration/test_maintained_state.py) asserts that the pack built
// from it equals the pack built from bootstrap/sections_fenced / _store after every write. Not used to serve.
// Python (tests/integration/oracle.py, graphsvc.core.cycles, graphsvc.core.pack) finds the cycle,
// ranks, caps and budgets.
//
// Parameters:
//   $arg.project_id, $arg.project_prefix  SPEC §2 fences; null = no fence (both given = AND). The extra
//                                 `STARTS WITH coalesce(...)` is implied by them and lets the planner
//                                 seek the (kind, project_id) index instead of scanning every capsule.
//   $arg.now                          the request clock (expired = valid_to <= $arg.now)
//   $arg.top_ready, $arg.top_section      how many rows each ranked section can show (next action + cap, cap)
//   $arg.tokens                       the request's distinct term tokens, [] without terms
//   $arg.agent                        who asks (SPEC §12), or null
//
// Lean transfer: candidates are listed in decay order (updated_at clamped to $arg.now, desc; then seq asc;
// updated_at truncated to microseconds like the driver's Python datetime), which is exactly the ranking
// order when coverage ties, so the first $arg.top_* rows are all a terms-free pack can show. With terms, a
// row past that prefix is also sent when it MIGHT cover a term token: its lowered text contains a token,
// or contains a non-ASCII character (Python's Unicode folding could turn it into one). Any other row
// covers nothing, so the prefix beats it and Python's ranking of what is sent is exact.
// Constraints are never capped: all of them are sent. Totals are always exact.
// updated_at travels as integer microseconds since the epoch (`updated_us`): decoding driver DateTime
// values cost ~70 µs each in Python, most of a small pack's time.
CALL () {
  MATCH (c:Capsule {kind: 'constraint'})
  WHERE c.project_id STARTS WITH coalesce($arg.project_id, $arg.project_prefix, '')
    AND ($arg.project_id IS NULL OR c.project_id = $arg.project_id)
    AND ($arg.project_prefix IS NULL OR c.project_id = $arg.project_prefix OR c.project_id STARTS WITH $arg.project_prefix + '/')
    AND c.tier = 'active'
    AND c.tombstoned_at IS NULL
    AND (c.valid_to IS NULL OR c.valid_to > $arg.now)
    AND NOT EXISTS { MATCH (s:Capsule)-[:SUPERSEDES]->(c) WHERE s.tombstoned_at IS NULL }
  RETURN collect(c {.id, .project_id, .headline, .content, .tier,
                             updated_us: c.updated_at.epochSeconds * 1000000 + c.updated_at.microsecond, superseded: false}) AS constraints
}
CALL () {
  MATCH (c:Capsule {kind: 'decision'})
  WHERE c.project_id STARTS WITH coalesce($arg.project_id, $arg.project_prefix, '')
    AND ($arg.project_id IS NULL OR c.project_id = $arg.project_id)
    AND ($arg.project_prefix IS NULL OR c.project_id = $arg.project_prefix OR c.project_id STARTS WITH $arg.project_prefix + '/')
    AND c.tombstoned_at IS NULL
    AND (c.valid_to IS NULL OR c.valid_to > $arg.now)
    AND NOT EXISTS { MATCH (s:Capsule)-[:SUPERSEDES]->(c) WHERE s.tombstoned_at IS NULL }
  WITH c
  ORDER BY CASE WHEN c.updated_at > $arg.now THEN $arg.now ELSE datetime.truncate('microsecond', c.updated_at) END DESC, c.seq ASC
  WITH collect(c) AS ordered
  RETURN size(ordered) AS decisions_total,
         [n IN [i IN range(0, size(ordered) - 1)
                WHERE i < $arg.top_section
                   OR (size($arg.tokens) > 0 AND any(text IN [toLower(ordered[i].headline + ' ' + ordered[i].content)]
                         WHERE NOT (text =~ '[\\x00-\\x7F]*') OR any(token IN $arg.tokens WHERE text CONTAINS token)))
                | ordered[i]]
          | n {.id, .project_id, .headline, .content, .tier,
               updated_us: n.updated_at.epochSeconds * 1000000 + n.updated_at.microsecond, superseded: false}] AS decisions
}
CALL () {
  MATCH (c:Capsule {kind: 'failure_pattern'})
  WHERE c.project_id STARTS WITH coalesce($arg.project_id, $arg.project_prefix, '')
    AND ($arg.project_id IS NULL OR c.project_id = $arg.project_id)
    AND ($arg.project_prefix IS NULL OR c.project_id = $arg.project_prefix OR c.project_id STARTS WITH $arg.project_prefix + '/')
    AND c.tombstoned_at IS NULL
  // Stale and superseded traps stay: each row carries its own tier and superseded marker.
  WITH c
  ORDER BY CASE WHEN c.updated_at > $arg.now THEN $arg.now ELSE datetime.truncate('microsecond', c.updated_at) END DESC, c.seq ASC
  WITH collect(c) AS ordered
  RETURN size(ordered) AS traps_total,
         [n IN [i IN range(0, size(ordered) - 1)
                WHERE i < $arg.top_section
                   OR (size($arg.tokens) > 0 AND any(text IN [toLower(ordered[i].headline + ' ' + ordered[i].content)]
                         WHERE NOT (text =~ '[\\x00-\\x7F]*') OR any(token IN $arg.tokens WHERE text CONTAINS token)))
                | ordered[i]]
          | n {.id, .project_id, .headline, .content, .tier,
               updated_us: n.updated_at.epochSeconds * 1000000 + n.updated_at.microsecond,
               superseded: EXISTS { MATCH (s:Capsule)-[:SUPERSEDES]->(n) WHERE s.tombstoned_at IS NULL }}] AS traps
}
CALL () {
  // The blocks-DAG in ONE pass over its live nodes: fenced task/epic, open, not tombstoned, not superseded.
  MATCH (t:Capsule)
  WHERE t.kind IN ['task', 'epic']
    AND t.project_id STARTS WITH coalesce($arg.project_id, $arg.project_prefix, '')
    AND ($arg.project_id IS NULL OR t.project_id = $arg.project_id)
    AND ($arg.project_prefix IS NULL OR t.project_id = $arg.project_prefix OR t.project_id STARTS WITH $arg.project_prefix + '/')
    AND t.status = 'open'
    AND t.tombstoned_at IS NULL
    AND NOT EXISTS { MATCH (s:Capsule)-[:SUPERSEDES]->(t) WHERE s.tombstoned_at IS NULL }
  // Its blockers that still block (fenced or not): not done, not tombstoned, not superseded. A blocker is
  // given by its seq when it is itself a live fenced node (a live edge, for the cycle check), else by 0.
  WITH t, COLLECT {
    MATCH (x:Capsule)-[:BLOCKS]->(t)
    WHERE x.tombstoned_at IS NULL
      AND coalesce(x.status, 'open') <> 'done'
      AND NOT EXISTS { MATCH (s:Capsule)-[:SUPERSEDES]->(x) WHERE s.tombstoned_at IS NULL }
    RETURN CASE
      WHEN x.kind IN ['task', 'epic']
       AND ($arg.project_id IS NULL OR x.project_id = $arg.project_id)
       AND ($arg.project_prefix IS NULL OR x.project_id = $arg.project_prefix OR x.project_id STARTS WITH $arg.project_prefix + '/')
      THEN x.seq ELSE 0 END AS blocker
  } AS blockers
  // SPEC §3 ready: live, not expired, and nothing blocks it any more.
  WITH t, blockers, [b IN blockers WHERE b > 0] AS live_sources
  WITH collect(CASE WHEN size(blockers) = 0 AND (t.valid_to IS NULL OR t.valid_to > $arg.now) THEN t END) AS ready_nodes,
       collect(CASE WHEN size(live_sources) > 0 THEN [t.seq, live_sources] END) AS live_blocked_by,
       sum(size([b IN live_sources WHERE b > t.seq])) AS back_edges
  // Claims (SPEC §12): a live lease (lease_until > now) takes a ready node out of the ready order;
  // the caller's own ($arg.agent) are sent apart, to be shown first, the others' only counted.
  WITH [r IN ready_nodes WHERE r.lease_until IS NOT NULL AND r.lease_until > $arg.now] AS leased,
       [r IN ready_nodes WHERE r.lease_until IS NULL OR r.lease_until <= $arg.now] AS ready_nodes,
       live_blocked_by, back_edges
  WITH [r IN leased WHERE $arg.agent IS NOT NULL AND r.lease_agent = $arg.agent] AS own, leased,
       ready_nodes, live_blocked_by, back_edges
  CALL (ready_nodes) {
    UNWIND ready_nodes AS r
    WITH r
    ORDER BY CASE WHEN r.updated_at > $arg.now THEN $arg.now ELSE datetime.truncate('microsecond', r.updated_at) END DESC, r.seq ASC
    RETURN collect(r) AS ordered
  }
  RETURN size(ordered) + size(own) AS ready_total, size(leased) - size(own) AS held_by_others,
         [n IN own | n {.id, .project_id, .headline, .content, .tier, superseded: false,
                        updated_us: n.updated_at.epochSeconds * 1000000 + n.updated_at.microsecond,
                        lease_until_us: n.lease_until.epochSeconds * 1000000 + n.lease_until.microsecond}] AS held,
         [n IN [i IN range(0, size(ordered) - 1)
                WHERE i < $arg.top_ready
                   OR (size($arg.tokens) > 0 AND any(text IN [toLower(ordered[i].headline + ' ' + ordered[i].content)]
                         WHERE NOT (text =~ '[\\x00-\\x7F]*') OR any(token IN $arg.tokens WHERE text CONTAINS token)))
                | ordered[i]]
          | n {.id, .project_id, .headline, .content, .tier,
               updated_us: n.updated_at.epochSeconds * 1000000 + n.updated_at.microsecond, superseded: false}] AS ready,
         // A cycle needs a back edge a->b with a.seq > b.seq (ids cannot increase all the way round), so
         // without one (edges created old -> new, the common case) no edge is sent at all.
         back_edges,
         CASE WHEN back_edges > 0 THEN live_blocked_by ELSE [] END AS live_blocked_by
}
RETURN constraints, size(constraints) AS constraints_total,
       ready, ready_total, held, held_by_others, back_edges, live_blocked_by,
       decisions, decisions_total, traps, traps_total
