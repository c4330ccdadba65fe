// memory_bootstrap read side (SPEC §2-§4), schema v4, the whole store: everything one pack needs, in ONE statement,
// one row, one round trip. It reads the state the writes maintain (graphsvc.store.maintain) instead
// of recomputing it, so a pack costs what it shows, not what its fence holds:
//   * ready tasks are sought through the maintained `counted` = 'ready' (indexed): a blocked task is never visited;
//   * "no cycle" is proven by looking up the fence's live BLOCKS edges marked `closes_loop` (the
//     writes keep a topological order in which every cycle has one); only a fence holding one
//     sends its live edges for graphsvc.core.cycles to name the canonical cycle;
//   * each ranked section is ranked HERE, with the key of graphsvc.core.ranking: whole terms
//     covered desc, distinct term tokens covered desc (against the stored folded `tokens`),
//     updated_at desc (clamped to the request clock, truncated to microseconds like the driver's
//     datetime), seq asc; so at most the rows a section can show travel. Python ranks them again
//     (same key) and fills the budget. Coverage travels as one number, `score` = whole terms *
//     $arg.whole_weight + tokens (0 for a row holding no term token). Each shipped row carries it counted
//     again from its stored tokens. Since schema v4 Lucene's score is that coverage exactly (a token
//     past 255 UTF-16 units, which Lucene indexes in pieces, is stored marked so no piece equals a
//     request token: graphsvc.store.maintain.stored_token); the recount keeps a store that v3 wrote,
//     until `migrate` has marked it, from reaching Python with a coverage its text does not hold.
//   * totals are exact: the fence's maintained per-project tallies, less the listed capsules that have
//     expired by $arg.now (sought per project through the (counted, project_id, valid_to) index).
//   * a ranked section never sorts its fence. Without terms, the top k are the k freshest live
//     rows: the "floor" is the truncated updated_at of the k-th freshest live row before $arg.now, read
//     in order from the (counted, updated_at) index, and the rows from
//     the floor on (all rows updated at/after $arg.now rank as $arg.now, so they are in) hold that top k
//     with its boundary ties whole.
//     With terms, rows holding a term token rank above those. $arg.rank_query is a Lucene query over
//     the kind's full-text `*_terms` index whose score IS that coverage (constant-score clauses,
//     graphsvc.store.bootstrap.rank_query). Lucene returns rows best first, so the k-th best score among live rows (the "cut") costs
//     k rows, and only the rows scoring at or above it are read (ties at the cut whole): the cut's
//     entry of $arg.at_least, a query matching exactly those rows, is added as a zero-weight clause
//     (without it Lucene would hand over every row holding a token, to be dropped here). When the
//     cut found k live rows (`full`), the top k all score at least the cut, above every row holding
//     no token, so the section skips its decay order altogether. When exact
//     scores cannot be had ($arg.rank_query null: very many terms, a token past Lucene's 255-char
//     limit), every row holding a token comes from $arg.token_queries and its coverage is computed from
//     its stored tokens. The union is ranked with the full key.
// This statement serves the pack of the whole store (no fence: $arg.project_id and $arg.project_prefix are
// null); a fenced pack has its own, bootstrap/sections_fenced.cypher, which reads each ranked
// section per project of its fence. Both return the same columns. Here the "fence's projects" of
// the totals are every project holding a listed capsule.
//
// Parameters:
//   $arg.project_id, $arg.project_prefix  SPEC §2 fences; null = no fence (both given = AND). The extra
//                                 `STARTS WITH coalesce(...)` is implied by them and lets the planner
//                                 seek the index by prefix instead of scanning every capsule.
//   $arg.now                          the request clock (expired = valid_to <= $arg.now)
//   $arg.tokens, $arg.term_sets           the request's distinct term tokens and each term's token set ([] without terms)
//   $arg.token_queries                Lucene queries that together find any of $arg.tokens (graphsvc.store.bootstrap.token_queries)
//   $arg.rank_query, $arg.whole_weight    the coverage-scoring Lucene query (or null) and a whole term's weight
//   $arg.at_least                     [score, Lucene query matching the rows scoring at least it] ([] = filter by score alone)
//   $arg.top_ready, $arg.top_section      rows the ready section (next action + cap) and decisions/traps can show
//   $arg.top_constraints              constraints the token budget could possibly hold (never count-capped)
//   $arg.budget_chars, $arg.row_chars_besides_text   the budget in characters, and a constraint row's least
//                                 cost less its id (twice), headline and project id: trims those further
// The index hints pin the plan whatever the statistics say (tests/integration/test_bootstrap_plan.py).
// updated_at travels as integer microseconds since the epoch (`updated_us`): decoding driver DateTime
// values cost ~70 µs each in Python.
CALL () {
// Totals (SPEC §4 `total`): the fence's maintained per-project tallies (graphsvc.store.maintain),
// so their cost follows the fence's projects, not its capsules; then, since expiry belongs to the
// request clock, the listed capsules that have expired are sought and taken off.
  MATCH (t:Tally) USING INDEX SEEK t:Tally(project_id)
  WHERE t.project_id STARTS WITH coalesce($arg.project_id, $arg.project_prefix, '')
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
  // No fence: the floor from the Capsule(counted, updated_at) index (counted = 'constraints') and the cut from the full-text index (see the header).
  CALL () {
    UNWIND CASE WHEN $arg.rank_query IS NULL THEN [] ELSE [$arg.rank_query] END AS rank_query
    CALL db.index.fulltext.queryNodes('constraint_terms', rank_query) YIELD node AS c, score
    WHERE c.counted = 'constraints' AND (c.valid_to IS NULL OR c.valid_to > $arg.now)
    WITH score LIMIT $arg.top_constraints
    RETURN min(score) AS cut, count(score) = $arg.top_constraints AS full
  }
  CALL (full) {
    UNWIND CASE WHEN full THEN [] ELSE [true] END AS decay_needed
    CALL () {
      MATCH (c:Capsule) USING INDEX SEEK c:Capsule(counted, updated_at)
      WHERE c.updated_at < $arg.now AND c.counted = 'constraints' AND (c.valid_to IS NULL OR c.valid_to > $arg.now)
      WITH c ORDER BY c.counted DESC, c.updated_at DESC LIMIT $arg.top_constraints
      RETURN datetime.truncate('microsecond', c.updated_at) AS freshest
    }
    RETURN min(freshest) AS floor
  }
  CALL (floor, cut, full) {
    UNWIND CASE WHEN full THEN [] ELSE [true] END AS decay_needed
    MATCH (c:Capsule) USING INDEX SEEK c:Capsule(counted, updated_at)
    WHERE c.updated_at >= coalesce(floor, $arg.now) AND c.counted = 'constraints' AND (c.valid_to IS NULL OR c.valid_to > $arg.now)
    RETURN c, 0.0 AS score
    UNION ALL
    UNWIND CASE WHEN $arg.rank_query IS NULL OR cut IS NULL THEN [] ELSE ['+(' + $arg.rank_query + ')' + coalesce(' +(' + [q IN $arg.at_least WHERE q[0] = cut | q[1]][0] + ')^0', '')] END AS at_cut
    CALL db.index.fulltext.queryNodes('constraint_terms', at_cut) YIELD node AS c, score
    WHERE score >= cut AND c.counted = 'constraints' AND (c.valid_to IS NULL OR c.valid_to > $arg.now)
    RETURN c, score
    UNION ALL
    UNWIND CASE WHEN $arg.rank_query IS NULL AND size($arg.tokens) > 0 THEN $arg.token_queries ELSE [] END AS token_query
    CALL db.index.fulltext.queryNodes('constraint_terms', token_query) YIELD node AS c
    WHERE c.counted = 'constraints' AND (c.valid_to IS NULL OR c.valid_to > $arg.now)
    WITH c, [t IN $arg.tokens WHERE t IN c.tokens] AS hit
    RETURN c, toFloat(size([ts IN $arg.term_sets WHERE all(t IN ts WHERE t IN hit)]) * $arg.whole_weight + size(hit)) AS score
  }
  WITH c, max(score) AS score
  WITH c, score ORDER BY score DESC,
                  CASE WHEN c.updated_at > $arg.now THEN $arg.now ELSE datetime.truncate('microsecond', c.updated_at) END DESC,
                  c.seq ASC
  LIMIT $arg.top_constraints
  // Only as far as the budget could hold them: the first row (the floor), then each row while the
  // rows after the first could still fit by their least cost (graphsvc.core.pack.constraint_row_floor:
  // the row and its handle without excerpt or escapes; size() counts code points, as Python's len),
  // then one more. The fill keeps a prefix in this order, so no row past these can be shown.
  WITH collect({c: c, score: score, least: $arg.row_chars_besides_text + 2 * size(c.id) + size(c.headline) + size(c.project_id)}) AS ranked
  WITH ranked[0 .. 2 + reduce(fit = [0, 0], r IN ranked[1..] |
                              CASE WHEN fit[0] >= 0 AND fit[0] + r.least <= $arg.budget_chars THEN [fit[0] + r.least, fit[1] + 1]
                                   ELSE [-1, fit[1]] END)[1]] AS kept
  UNWIND kept AS r
  WITH r.c AS c, r.score AS score
  // The shipped coverage, counted from the stored tokens (see the header: exact even on a store
  // that v3 wrote, whose long tokens Lucene indexed in pieces).
  WITH c, CASE WHEN score > 0 THEN [t IN $arg.tokens WHERE t IN c.tokens] ELSE [] END AS hit
  RETURN collect(c {.id, .project_id, .headline, .content, .tier, superseded: false,
                    updated_us: c.updated_at.epochSeconds * 1000000 + c.updated_at.microsecond,
                    score: size([ts IN $arg.term_sets WHERE all(t IN ts WHERE t IN hit)]) * $arg.whole_weight + size(hit)}) AS unfenced_constraints
}
CALL () {
  // No fence: the floor from the Capsule(counted, updated_at) index (counted = 'decisions') and the cut from the full-text index (see the header).
  CALL () {
    UNWIND CASE WHEN $arg.rank_query IS NULL THEN [] ELSE [$arg.rank_query] END AS rank_query
    CALL db.index.fulltext.queryNodes('decision_terms', rank_query) YIELD node AS c, score
    WHERE c.counted = 'decisions' AND (c.valid_to IS NULL OR c.valid_to > $arg.now)
    WITH score LIMIT $arg.top_section
    RETURN min(score) AS cut, count(score) = $arg.top_section AS full
  }
  CALL (full) {
    UNWIND CASE WHEN full THEN [] ELSE [true] END AS decay_needed
    CALL () {
      MATCH (c:Capsule) USING INDEX SEEK c:Capsule(counted, updated_at)
      WHERE c.updated_at < $arg.now AND c.counted = 'decisions' AND (c.valid_to IS NULL OR c.valid_to > $arg.now)
      WITH c ORDER BY c.counted DESC, c.updated_at DESC LIMIT $arg.top_section
      RETURN datetime.truncate('microsecond', c.updated_at) AS freshest
    }
    RETURN min(freshest) AS floor
  }
  CALL (floor, cut, full) {
    UNWIND CASE WHEN full THEN [] ELSE [true] END AS decay_needed
    MATCH (c:Capsule) USING INDEX SEEK c:Capsule(counted, updated_at)
    WHERE c.updated_at >= coalesce(floor, $arg.now) AND c.counted = 'decisions' AND (c.valid_to IS NULL OR c.valid_to > $arg.now)
    RETURN c, 0.0 AS score
    UNION ALL
    UNWIND CASE WHEN $arg.rank_query IS NULL OR cut IS NULL THEN [] ELSE ['+(' + $arg.rank_query + ')' + coalesce(' +(' + [q IN $arg.at_least WHERE q[0] = cut | q[1]][0] + ')^0', '')] END AS at_cut
    CALL db.index.fulltext.queryNodes('decision_terms', at_cut) YIELD node AS c, score
    WHERE score >= cut AND c.counted = 'decisions' AND (c.valid_to IS NULL OR c.valid_to > $arg.now)
    RETURN c, score
    UNION ALL
    UNWIND CASE WHEN $arg.rank_query IS NULL AND size($arg.tokens) > 0 THEN $arg.token_queries ELSE [] END AS token_query
    CALL db.index.fulltext.queryNodes('decision_terms', token_query) YIELD node AS c
    WHERE c.counted = 'decisions' AND (c.valid_to IS NULL OR c.valid_to > $arg.now)
    WITH c, [t IN $arg.tokens WHERE t IN c.tokens] AS hit
    RETURN c, toFloat(size([ts IN $arg.term_sets WHERE all(t IN ts WHERE t IN hit)]) * $arg.whole_weight + size(hit)) AS score
  }
  WITH c, max(score) AS score
  WITH c, score ORDER BY score DESC,
                  CASE WHEN c.updated_at > $arg.now THEN $arg.now ELSE datetime.truncate('microsecond', c.updated_at) END DESC,
                  c.seq ASC
  LIMIT $arg.top_section
  // The shipped coverage, counted from the stored tokens (see the header: exact even on a store
  // that v3 wrote, whose long tokens Lucene indexed in pieces).
  WITH c, CASE WHEN score > 0 THEN [t IN $arg.tokens WHERE t IN c.tokens] ELSE [] END AS hit
  RETURN collect(c {.id, .project_id, .headline, .content, .tier, superseded: false,
                    updated_us: c.updated_at.epochSeconds * 1000000 + c.updated_at.microsecond,
                    score: size([ts IN $arg.term_sets WHERE all(t IN ts WHERE t IN hit)]) * $arg.whole_weight + size(hit)}) AS unfenced_decisions
}
CALL () {
  // No fence: the floor from the Capsule(counted, updated_at) index (counted = 'traps') and the cut from the full-text index (see the header).
  CALL () {
    UNWIND CASE WHEN $arg.rank_query IS NULL THEN [] ELSE [$arg.rank_query] END AS rank_query
    CALL db.index.fulltext.queryNodes('failure_pattern_terms', rank_query) YIELD node AS c, score
    WHERE c.counted = 'traps'
    WITH score LIMIT $arg.top_section
    RETURN min(score) AS cut, count(score) = $arg.top_section AS full
  }
  CALL (full) {
    UNWIND CASE WHEN full THEN [] ELSE [true] END AS decay_needed
    CALL () {
      MATCH (c:Capsule) USING INDEX SEEK c:Capsule(counted, updated_at)
      WHERE c.updated_at < $arg.now AND c.counted = 'traps'
      WITH c ORDER BY c.counted DESC, c.updated_at DESC LIMIT $arg.top_section
      RETURN datetime.truncate('microsecond', c.updated_at) AS freshest
    }
    RETURN min(freshest) AS floor
  }
  CALL (floor, cut, full) {
    UNWIND CASE WHEN full THEN [] ELSE [true] END AS decay_needed
    MATCH (c:Capsule) USING INDEX SEEK c:Capsule(counted, updated_at)
    WHERE c.updated_at >= coalesce(floor, $arg.now) AND c.counted = 'traps'
    RETURN c, 0.0 AS score
    UNION ALL
    UNWIND CASE WHEN $arg.rank_query IS NULL OR cut IS NULL THEN [] ELSE ['+(' + $arg.rank_query + ')' + coalesce(' +(' + [q IN $arg.at_least WHERE q[0] = cut | q[1]][0] + ')^0', '')] END AS at_cut
    CALL db.index.fulltext.queryNodes('failure_pattern_terms', at_cut) YIELD node AS c, score
    WHERE score >= cut AND c.counted = 'traps'
    RETURN c, score
    UNION ALL
    UNWIND CASE WHEN $arg.rank_query IS NULL AND size($arg.tokens) > 0 THEN $arg.token_queries ELSE [] END AS token_query
    CALL db.index.fulltext.queryNodes('failure_pattern_terms', token_query) YIELD node AS c
    WHERE c.counted = 'traps'
    WITH c, [t IN $arg.tokens WHERE t IN c.tokens] AS hit
    RETURN c, toFloat(size([ts IN $arg.term_sets WHERE all(t IN ts WHERE t IN hit)]) * $arg.whole_weight + size(hit)) AS score
  }
  WITH c, max(score) AS score
  WITH c, score ORDER BY score DESC,
                  CASE WHEN c.updated_at > $arg.now THEN $arg.now ELSE datetime.truncate('microsecond', c.updated_at) END DESC,
                  c.seq ASC
  LIMIT $arg.top_section
  // The shipped coverage, counted from the stored tokens (see the header: exact even on a store
  // that v3 wrote, whose long tokens Lucene indexed in pieces).
  WITH c, CASE WHEN score > 0 THEN [t IN $arg.tokens WHERE t IN c.tokens] ELSE [] END AS hit
  RETURN collect(c {.id, .project_id, .headline, .content, .tier, superseded: c.superseded,
                    updated_us: c.updated_at.epochSeconds * 1000000 + c.updated_at.microsecond,
                    score: size([ts IN $arg.term_sets WHERE all(t IN ts WHERE t IN hit)]) * $arg.whole_weight + size(hit)}) AS unfenced_traps
}
CALL () {
  // No fence: the floor from the Capsule(counted, updated_at) index (counted = 'ready') and the cut from the full-text index (see the header).
  CALL () {
    UNWIND CASE WHEN $arg.rank_query IS NULL THEN [] ELSE [$arg.rank_query] END AS rank_query
    CALL db.index.fulltext.queryNodes('task_terms', rank_query) YIELD node AS c, score
    WHERE c.counted = 'ready' AND (c.valid_to IS NULL OR c.valid_to > $arg.now)
    WITH score LIMIT $arg.top_ready
    RETURN min(score) AS cut, count(score) = $arg.top_ready AS full
  }
  CALL (full) {
    UNWIND CASE WHEN full THEN [] ELSE [true] END AS decay_needed
    CALL () {
      MATCH (c:Capsule) USING INDEX SEEK c:Capsule(counted, updated_at)
      WHERE c.counted = 'ready' AND c.updated_at < $arg.now AND (c.valid_to IS NULL OR c.valid_to > $arg.now)
      WITH c ORDER BY c.counted DESC, c.updated_at DESC LIMIT $arg.top_ready
      RETURN datetime.truncate('microsecond', c.updated_at) AS freshest
    }
    RETURN min(freshest) AS floor
  }
  CALL (floor, cut, full) {
    UNWIND CASE WHEN full THEN [] ELSE [true] END AS decay_needed
    MATCH (c:Capsule) USING INDEX SEEK c:Capsule(counted, updated_at)
    WHERE c.counted = 'ready' AND c.updated_at >= coalesce(floor, $arg.now) AND (c.valid_to IS NULL OR c.valid_to > $arg.now)
    RETURN c, 0.0 AS score
    UNION ALL
    UNWIND CASE WHEN $arg.rank_query IS NULL OR cut IS NULL THEN [] ELSE ['+(' + $arg.rank_query + ')' + coalesce(' +(' + [q IN $arg.at_least WHERE q[0] = cut | q[1]][0] + ')^0', '')] END AS at_cut
    CALL db.index.fulltext.queryNodes('task_terms', at_cut) YIELD node AS c, score
    WHERE score >= cut AND c.counted = 'ready' AND (c.valid_to IS NULL OR c.valid_to > $arg.now)
    RETURN c, score
    UNION ALL
    UNWIND CASE WHEN $arg.rank_query IS NULL AND size($arg.tokens) > 0 THEN $arg.token_queries ELSE [] END AS token_query
    CALL db.index.fulltext.queryNodes('task_terms', token_query) YIELD node AS c
    WHERE c.counted = 'ready' AND (c.valid_to IS NULL OR c.valid_to > $arg.now)
    WITH c, [t IN $arg.tokens WHERE t IN c.tokens] AS hit
    RETURN c, toFloat(size([ts IN $arg.term_sets WHERE all(t IN ts WHERE t IN hit)]) * $arg.whole_weight + size(hit)) AS score
  }
  WITH c, max(score) AS score
  WITH c, score ORDER BY score DESC,
                  CASE WHEN c.updated_at > $arg.now THEN $arg.now ELSE datetime.truncate('microsecond', c.updated_at) END DESC,
                  c.seq ASC
  LIMIT $arg.top_ready
  // The shipped coverage, counted from the stored tokens (see the header: exact even on a store
  // that v3 wrote, whose long tokens Lucene indexed in pieces).
  WITH c, CASE WHEN score > 0 THEN [t IN $arg.tokens WHERE t IN c.tokens] ELSE [] END AS hit
  RETURN collect(c {.id, .project_id, .headline, .content, .tier, superseded: false,
                    updated_us: c.updated_at.epochSeconds * 1000000 + c.updated_at.microsecond,
                    score: size([ts IN $arg.term_sets WHERE all(t IN ts WHERE t IN hit)]) * $arg.whole_weight + size(hit)}) AS unfenced_ready
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
    AND t.tombstoned_at IS NULL AND t.superseded = false
  WITH t, COLLECT {
    MATCH (x:Capsule)-[:BLOCKS]->(t)
    WHERE x.status = 'open' AND x.tombstoned_at IS NULL AND x.superseded = false
      AND ($arg.project_id IS NULL OR x.project_id = $arg.project_id)
      AND ($arg.project_prefix IS NULL OR x.project_id = $arg.project_prefix OR x.project_id STARTS WITH $arg.project_prefix + '/')
    RETURN x.seq
  } AS live_sources
  WHERE size(live_sources) > 0
  RETURN collect([t.seq, live_sources]) AS live_blocked_by
}
RETURN unfenced_constraints AS constraints, constraints_listed - constraints_expired AS constraints_total,
       unfenced_ready AS ready, ready_listed - ready_expired AS ready_total, loop_edges, live_blocked_by,
       unfenced_decisions AS decisions, decisions_listed - decisions_expired AS decisions_total,
       unfenced_traps AS traps, traps_total
