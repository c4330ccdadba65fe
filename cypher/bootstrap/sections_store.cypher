// memory_bootstrap read side (SPEC §2-§4), schema v5: the ranked sections of the whole store's pack
// (no fence), after bootstrap/head.cypher. The same section block, ranking key, cut and floor as
// bootstrap/sections_fenced.cypher (its header says how and why), run the same two ways (constraints;
// then ready, decisions and traps), but read from the store-wide indexes: the floor from the
// Capsule(counted, updated_at) index, the cut from the full-text index without project clauses (the
// section's kind clause only). A section marked `all_rows` skips the floor, as there.
//
// Rows under a live lease (SPEC §12) are skipped, with the filter written as in
// bootstrap/sections_fenced.cypher (a coalesce, not an OR, so the floor keeps the index's order).
// Parameters: those of bootstrap/sections_fenced.cypher, without $arg.fence_projects and
// $arg.projects_per_query.
UNWIND $arg.sections AS s
CALL (s) {
  CALL (s) {
    UNWIND CASE WHEN $arg.rank_query IS NULL THEN [] ELSE [$arg.rank_query] END AS rank_query
    CALL db.index.fulltext.queryNodes('capsule_terms', '+(' + rank_query + ') +(' + s.kinds + ')^0') YIELD node AS c, score
    WHERE c.counted = s.counted AND (NOT s.live OR c.valid_to IS NULL OR c.valid_to > $arg.now)
      AND coalesce(c.lease_until, $arg.now) <= $arg.now
    WITH score LIMIT $arg.top
    RETURN min(score) AS cut, count(score) = $arg.top AS full
  }
  CALL (s, full) {
    UNWIND CASE WHEN full OR s.all_rows THEN [] ELSE [true] END AS decay_needed
    CALL (s) {
      MATCH (c:Capsule) USING INDEX SEEK c:Capsule(counted, updated_at)
      WHERE c.counted = s.counted AND c.updated_at < $arg.now AND (NOT s.live OR c.valid_to IS NULL OR c.valid_to > $arg.now)
      AND coalesce(c.lease_until, $arg.now) <= $arg.now
      WITH c ORDER BY c.counted DESC, c.updated_at DESC LIMIT $arg.top
      RETURN datetime.truncate('microsecond', c.updated_at) AS freshest
    }
    RETURN min(freshest) AS floor
  }
  CALL (s, floor, cut, full) {
    UNWIND CASE WHEN full THEN [] ELSE [true] END AS decay_needed
    MATCH (c:Capsule) USING INDEX SEEK c:Capsule(counted, updated_at)
    WHERE c.counted = s.counted AND c.updated_at >= coalesce(floor, CASE WHEN s.all_rows THEN datetime('0001-01-01T00:00:00Z') ELSE $arg.now END) AND (NOT s.live OR c.valid_to IS NULL OR c.valid_to > $arg.now)
      AND coalesce(c.lease_until, $arg.now) <= $arg.now
    RETURN c, 0.0 AS score
    UNION ALL
    UNWIND CASE WHEN $arg.rank_query IS NULL OR cut IS NULL THEN [] ELSE ['+(' + $arg.rank_query + ') +(' + s.kinds + ')^0' + coalesce(' +(' + [q IN $arg.at_least WHERE q[0] = cut | q[1]][0] + ')^0', '')] END AS at_cut
    CALL db.index.fulltext.queryNodes('capsule_terms', at_cut) YIELD node AS c, score
    WHERE score >= cut AND c.counted = s.counted AND (NOT s.live OR c.valid_to IS NULL OR c.valid_to > $arg.now)
      AND coalesce(c.lease_until, $arg.now) <= $arg.now
    RETURN c, score
    UNION ALL
    UNWIND CASE WHEN $arg.rank_query IS NULL AND size($arg.tokens) > 0 THEN $arg.token_queries ELSE [] END AS token_query
    CALL db.index.fulltext.queryNodes('capsule_terms', '+(' + token_query + ') +(' + s.kinds + ')') YIELD node AS c
    WHERE c.counted = s.counted AND (NOT s.live OR c.valid_to IS NULL OR c.valid_to > $arg.now)
      AND coalesce(c.lease_until, $arg.now) <= $arg.now
    WITH c, [t IN $arg.tokens WHERE t IN c.tokens] AS hit
    RETURN c, toFloat(size([ts IN $arg.term_sets WHERE all(t IN ts WHERE t IN hit)]) * $arg.whole_weight + size(hit)) AS score
  }
  WITH s, c, max(score) AS score
  WITH s, c, score ORDER BY score DESC,
                     CASE WHEN c.updated_at > $arg.now THEN $arg.now ELSE datetime.truncate('microsecond', c.updated_at) END DESC,
                     c.seq ASC
  LIMIT $arg.top
  WITH s, collect({c: c, score: score, least: $arg.row_chars_besides_text + 2 * size(c.id) + size(c.headline) + size(c.project_id)}) AS ranked
  WITH s, CASE WHEN s.cap IS NULL THEN ranked ELSE ranked[..s.cap] END AS ranked
  WITH s, ranked[0 .. 2 + reduce(fit = [0, 0], r IN ranked[1..] |
                                 CASE WHEN fit[0] >= 0 AND fit[0] + r.least <= $arg.budget_chars THEN [fit[0] + r.least, fit[1] + 1]
                                      ELSE [-1, fit[1]] END)[1]] AS kept
  UNWIND kept AS r
  WITH r.c AS c, r.score AS score
  WITH c, CASE WHEN score > 0 THEN [t IN $arg.tokens WHERE t IN c.tokens] ELSE [] END AS hit
  RETURN collect(c {.id, .project_id, .headline, .content, .tier, .superseded,
                    updated_us: c.updated_at.epochSeconds * 1000000 + c.updated_at.microsecond,
                    score: size([ts IN $arg.term_sets WHERE all(t IN ts WHERE t IN hit)]) * $arg.whole_weight + size(hit)}) AS rows
}
RETURN s.name AS section, rows
