// memory_bootstrap read side (SPEC §2-§4), schema v5: the ranked sections of a fenced pack
// ($arg.project_id and/or $arg.project_prefix), after bootstrap/head.cypher gave the fence's projects.
// The whole store (no fence) has bootstrap/sections_store.cypher, which reads the store-wide
// indexes instead.
//
// ONE section block, written once, serves every section: `UNWIND $arg.sections` names each
// section's maintained `counted` value, full-text kind clause, whether expired rows drop out, and its cap
// (graphsvc.store.bootstrap.SECTIONS). A pack runs this statement twice in its read transaction:
// once for the constraints, whose rows are bounded by the token budget ($arg.top large, then
// trimmed by least cost), once for ready, decisions and traps, whose rows are capped ($arg.top =
// the largest cap, each section sliced to its own). Cypher's LIMIT cannot name a variable, so the
// bound is the run's parameter, not the section's; the two runs share one plan. When the fence's live
// constraints are no more than the second run's top, the pack runs it once for all four sections
// (graphsvc.store.bootstrap.pack_runs).
//
// Each ranked section is ranked HERE, with the key of graphsvc.core.ranking: whole terms covered
// desc, distinct term tokens covered desc (against the stored folded `tokens`), updated_at desc
// (clamped to the request clock, truncated to microseconds like the driver's datetime), seq asc;
// so at most the rows a section can show travel. Python ranks them again (same key) and fills the
// budget. Coverage travels as one number, `score` = whole terms * $arg.whole_weight + tokens (0 for
// a row holding no term token). Each shipped row carries it counted again from its stored tokens.
// Since schema v4 Lucene's score is that coverage exactly (a token past 255 UTF-16 units, which
// Lucene indexes in pieces, is stored marked so no piece equals a request token:
// graphsvc.store.maintain.stored_token); the recount keeps a store that v3 wrote, until `migrate`
// has marked it, from reaching Python with a coverage its text does not hold.
//
// A section never sorts its fence. Without terms, the top k are the k freshest live rows: the
// "floor" is the truncated updated_at of the k-th freshest live row before $arg.now, read in order
// from the (counted, project_id, updated_at) index, k rows from each of the fence's projects, and
// the rows from the floor on (all rows updated at/after $arg.now rank as $arg.now, so they are in)
// hold that top k with its boundary ties whole. A section whose live rows in the fence are no more
// than k (`s.all_rows`, from the head's totals) skips the floor and reads them all from the oldest
// on (every stored updated_at is a Python datetime: year 1 or later): seeking the floor would visit
// each of them only to find the oldest.
// With terms, rows holding a term token rank above those. $arg.rank_query is a Lucene query over the
// full-text `capsule_terms` index whose score IS that coverage (constant-score clauses,
// graphsvc.store.bootstrap.rank_query); here it also requires one of the fence's project ids and
// one of the section's kinds (s.kinds), both at weight 0 so the score stays the coverage.
// Lucene returns rows best first, so the k-th best score among live rows (the "cut") costs k rows,
// and only the rows scoring at or above it are read (ties at the cut whole): the cut's entry of
// $arg.at_least, a query matching exactly those rows, is added as a zero-weight clause (without it
// Lucene would hand over every row holding a token, to be dropped here). When the cut found k live
// rows (`full`), the top k all score at least the cut, above every row holding no token, so the
// section skips its decay order altogether. When exact scores cannot be had ($arg.rank_query null:
// very many terms, a token past Lucene's 255-char limit), every row holding a token comes from
// $arg.token_queries and its coverage is computed from its stored tokens. The union is ranked with
// the full key.
//
// Parameters:
//   $arg.sections                     [{name, counted, kinds, live, cap, all_rows}]: kinds = the Lucene clause naming
//                                     the section's kinds (graphsvc.store.bootstrap.kind_clause), live = expired rows drop out,
//                                     cap = the rows the section can show (null: the budget alone bounds them),
//                                     all_rows = $arg.top covers every live row of the section (graphsvc.store.bootstrap.section_runs)
//   $arg.top                          rows each section reads and ranks (the LIMIT of this run)
//   $arg.fence_projects               the fence's projects holding listed capsules (bootstrap/head.cypher)
//   $arg.projects_per_query           the most project ids one fenced full-text query names
//   $arg.now                          the request clock (expired = valid_to <= $arg.now)
//   $arg.tokens, $arg.term_sets       the request's distinct term tokens and each term's token set ([] without terms)
//   $arg.token_queries                Lucene queries that together find any of $arg.tokens (graphsvc.store.bootstrap.token_queries)
//   $arg.rank_query, $arg.whole_weight    the coverage-scoring Lucene query (or null) and a whole term's weight
//   $arg.at_least                     [score, Lucene query matching the rows scoring at least it] ([] = filter by score alone)
//   $arg.budget_chars, $arg.row_chars_besides_text   the budget in characters, and a constraint row's least
//                                 cost less its id (twice), headline and project id: trims a run further
// Claims (SPEC §12): a row under a live lease (`lease_until > $arg.now`) is read by no section: the
// head (bootstrap/head.cypher) counts others' and returns the caller's own, which come first.
// That filter is `coalesce(c.lease_until, $arg.now) <= $arg.now`, never the equivalent OR: the
// planner may plan an OR as a union of two seeks, which loses the index's order, and a floor then
// sorts every row of its section instead of reading its k freshest (tests/integration/test_bootstrap_plan.py).
// The index hints pin the plan whatever the statistics say (tests/integration/test_bootstrap_plan.py).
// updated_at travels as integer microseconds since the epoch (`updated_us`): decoding driver DateTime
// values cost ~70 µs each in Python.
//
// The fence's projects as Lucene clauses for the full-text queries: quoted `project_id` phrases
// (the whitespace analyzer makes any valid id one or more terms: a superset, filtered by
// `c.project_id IN fence_projects`), at most $arg.projects_per_query to a query.
WITH $arg.fence_projects AS fence_projects,
     [start IN range(0, size($arg.fence_projects) - 1, $arg.projects_per_query) WHERE start < size($arg.fence_projects) |
      reduce(q = '', p IN $arg.fence_projects[start..start + $arg.projects_per_query] |
             q + ' project_id:"' + replace(replace(p, '\\', '\\\\'), '"', '\\"') + '"')] AS fence_clauses
UNWIND $arg.sections AS s
CALL (s, fence_projects, fence_clauses) {
  // The cut: the k-th best coverage score among the section's live rows, from the full-text query
  // naming the fence's projects.
  CALL (s, fence_projects, fence_clauses) {
    UNWIND CASE WHEN $arg.rank_query IS NULL THEN [] ELSE fence_clauses END AS in_fence
    CALL (s, fence_projects, in_fence) {
      CALL db.index.fulltext.queryNodes('capsule_terms', '+(' + $arg.rank_query + ') +(' + in_fence + ')^0 +(' + s.kinds + ')^0') YIELD node AS c, score
      WHERE c.project_id IN fence_projects AND c.counted = s.counted AND (NOT s.live OR c.valid_to IS NULL OR c.valid_to > $arg.now)
      AND coalesce(c.lease_until, $arg.now) <= $arg.now
      WITH c, score LIMIT $arg.top
      RETURN c, score
    }
    // distinct: ids split on whitespace, so one chunk's `p/a` also finds `p/a b`, another chunk's project
    WITH DISTINCT c, score ORDER BY score DESC LIMIT $arg.top
    RETURN min(score) AS cut, count(score) = $arg.top AS full
  }
  // The floor: from each of the fence's projects its k freshest live rows.
  CALL (s, fence_projects, full) {
    UNWIND CASE WHEN full OR s.all_rows THEN [] ELSE fence_projects END AS p
    CALL (s, p) {
      MATCH (c:Capsule) USING INDEX SEEK c:Capsule(counted, project_id, updated_at)
      WHERE c.counted = s.counted AND c.project_id = p AND c.updated_at < $arg.now AND (NOT s.live OR c.valid_to IS NULL OR c.valid_to > $arg.now)
      AND coalesce(c.lease_until, $arg.now) <= $arg.now
      WITH c ORDER BY c.counted DESC, c.project_id DESC, c.updated_at DESC LIMIT $arg.top
      RETURN datetime.truncate('microsecond', c.updated_at) AS freshest
    }
    WITH freshest ORDER BY freshest DESC LIMIT $arg.top
    RETURN min(freshest) AS floor
  }
  CALL (s, fence_projects, fence_clauses, floor, cut, full) {
    UNWIND CASE WHEN full THEN [] ELSE fence_projects END AS p
    MATCH (c:Capsule) USING INDEX SEEK c:Capsule(counted, project_id, updated_at)
    WHERE c.counted = s.counted AND c.project_id = p AND c.updated_at >= coalesce(floor, CASE WHEN s.all_rows THEN datetime('0001-01-01T00:00:00Z') ELSE $arg.now END) AND (NOT s.live OR c.valid_to IS NULL OR c.valid_to > $arg.now)
      AND coalesce(c.lease_until, $arg.now) <= $arg.now
    RETURN c, 0.0 AS score
    UNION ALL
    UNWIND CASE WHEN $arg.rank_query IS NULL OR cut IS NULL THEN [] ELSE fence_clauses END AS in_fence
    CALL db.index.fulltext.queryNodes('capsule_terms', '+(' + $arg.rank_query + ') +(' + in_fence + ')^0 +(' + s.kinds + ')^0' + coalesce(' +(' + [q IN $arg.at_least WHERE q[0] = cut | q[1]][0] + ')^0', '')) YIELD node AS c, score
    WHERE score >= cut AND c.project_id IN fence_projects AND c.counted = s.counted AND (NOT s.live OR c.valid_to IS NULL OR c.valid_to > $arg.now)
      AND coalesce(c.lease_until, $arg.now) <= $arg.now
    RETURN c, score
    UNION ALL
    UNWIND CASE WHEN $arg.rank_query IS NULL AND size($arg.tokens) > 0 THEN fence_clauses ELSE [] END AS in_fence
    UNWIND $arg.token_queries AS token_query
    CALL db.index.fulltext.queryNodes('capsule_terms', '+' + token_query + ' +(' + in_fence + ') +(' + s.kinds + ')') YIELD node AS c
    WHERE c.project_id IN fence_projects AND c.counted = s.counted AND (NOT s.live OR c.valid_to IS NULL OR c.valid_to > $arg.now)
      AND coalesce(c.lease_until, $arg.now) <= $arg.now
    WITH c, [t IN $arg.tokens WHERE t IN c.tokens] AS hit
    RETURN c, toFloat(size([ts IN $arg.term_sets WHERE all(t IN ts WHERE t IN hit)]) * $arg.whole_weight + size(hit)) AS score
  }
  WITH s, c, max(score) AS score
  WITH s, c, score ORDER BY score DESC,
                     CASE WHEN c.updated_at > $arg.now THEN $arg.now ELSE datetime.truncate('microsecond', c.updated_at) END DESC,
                     c.seq ASC
  LIMIT $arg.top
  // The section's cap, then only as far as the budget could hold the rows: the first row (the
  // floor), then each row while the rows after the first could still fit by their least cost
  // (graphsvc.core.pack.constraint_row_floor: the row and its handle without excerpt or escapes;
  // size() counts code points, as Python's len), then one more. The fill keeps a prefix in this
  // order, so no row past these can be shown.
  WITH s, collect({c: c, score: score, least: $arg.row_chars_besides_text + 2 * size(c.id) + size(c.headline) + size(c.project_id)}) AS ranked
  WITH s, CASE WHEN s.cap IS NULL THEN ranked ELSE ranked[..s.cap] END AS ranked
  WITH s, ranked[0 .. 2 + reduce(fit = [0, 0], r IN ranked[1..] |
                                 CASE WHEN fit[0] >= 0 AND fit[0] + r.least <= $arg.budget_chars THEN [fit[0] + r.least, fit[1] + 1]
                                      ELSE [-1, fit[1]] END)[1]] AS kept
  UNWIND kept AS r
  WITH s, r.c AS c, r.score AS score
  // The shipped coverage, counted from the stored tokens (see the header: exact even on a store
  // that v3 wrote, whose long tokens Lucene indexed in pieces). Only traps list superseded rows.
  WITH c, CASE WHEN score > 0 THEN [t IN $arg.tokens WHERE t IN c.tokens] ELSE [] END AS hit
  RETURN collect(c {.id, .project_id, .headline, .content, .tier, .superseded,
                    updated_us: c.updated_at.epochSeconds * 1000000 + c.updated_at.microsecond,
                    score: size([ts IN $arg.term_sets WHERE all(t IN ts WHERE t IN hit)]) * $arg.whole_weight + size(hit)}) AS rows
}
RETURN s.name AS section, rows
