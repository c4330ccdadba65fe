// memory_retrieve (SPEC §8): the raw matches of a request's groups, in ONE statement and one row.
// Candidates come from the full-text `capsule_terms` index over the maintained folded `tokens`,
// whose query requires the request's kinds and exact project when it names them, and its prefix
// fence when that is one Lucene term (graphsvc.store.retrieve.lucene_queries); the fences and kinds
// are checked again here, exactly. Each candidate carries its coverage as one number, `score` =
// groups covered * $arg.weight + caller tokens covered, which orders rows as the first two parts of
// graphsvc.core.retrieve's key do. It comes one of two ways:
//   * $arg.query (no alias in the request's groups): ONE Lucene query that requires at least one
//     group's tokens (at weight 0) and whose score IS that coverage (constant-score clauses,
//     graphsvc.store.retrieve.scored_query). No candidate's token list is read: at 1M, reading and
//     scanning them was most of the statement's time (bench/RESULTS.md).
//   * $arg.queries otherwise (an alias in play, or no exact score to be had): each ORs the
//     request's alternatives, an alternative being one token set of a group (the caller's term or
//     one of its aliases) whose tokens are all required, and the match and coverage are counted
//     here from the stored tokens (`all(t IN alt.tokens WHERE t IN c.tokens)`). Lucene cannot
//     score "any alternative of a group" as one group.
// Tombstoned capsules never match by text. Each live match gets the first eligibility rule it
// fails (superseded, expired at $arg.now, archived) or none, from one read of the row's properties.
// Only the eligible are ranked, and only those that can reach the first $arg.limit are sorted: the
// `cut` is the $arg.limit-th best score among them, and rows scoring at or above it (its ties whole)
// are ordered by the rest of the key (updated_at clamped to $arg.now and truncated to microseconds
// desc, seq asc). The first $arg.limit leave Neo4j, with the request tokens each holds (`hit`) so
// Python names its matched terms and ranks them again with the same key.
// The probe: $arg.probe_ids (terms that are exactly a capsule id) counts the tombstoned ones in
// the fences and kinds.
CALL () {
  WITH $arg.query AS query
  WHERE query IS NOT NULL
  CALL db.index.fulltext.queryNodes('capsule_terms', query) YIELD node, score
  RETURN node AS c, toInteger(score) AS score
  UNION ALL
  UNWIND $arg.queries AS query
  CALL db.index.fulltext.queryNodes('capsule_terms', query) YIELD node
  WITH DISTINCT node AS c
  WHERE c.tombstoned_at IS NULL
  WITH c, [alt IN $arg.alternatives WHERE all(t IN alt.tokens WHERE t IN c.tokens) | alt.group] AS hit_groups
  WHERE size(hit_groups) > 0
  RETURN c, size(reduce(seen = [], g IN hit_groups | CASE WHEN g IN seen THEN seen ELSE seen + g END)) * $arg.weight
            + size([t IN $arg.caller_tokens WHERE t IN c.tokens]) AS score
}
WITH c, score, c {.tombstoned_at, .kind, .project_id, .superseded, .valid_to, .tier} AS row
WHERE row.tombstoned_at IS NULL
  AND ($arg.kinds IS NULL OR row.kind IN $arg.kinds)
  AND ($arg.project_id IS NULL OR row.project_id = $arg.project_id)
  AND ($arg.project_prefix IS NULL OR row.project_id = $arg.project_prefix
       OR row.project_id STARTS WITH $arg.project_prefix + '/')
WITH c, score, CASE WHEN coalesce(row.superseded, false) THEN 'superseded'
                    WHEN row.valid_to IS NOT NULL AND row.valid_to <= $arg.now THEN 'expired'
                    WHEN row.tier = 'archived' THEN 'archived' END AS reason
WITH collect(CASE WHEN reason IS NULL THEN {c: c, score: score} END) AS eligible,
     sum(CASE reason WHEN 'superseded' THEN 1 ELSE 0 END) AS superseded,
     sum(CASE reason WHEN 'expired' THEN 1 ELSE 0 END) AS expired,
     sum(CASE reason WHEN 'archived' THEN 1 ELSE 0 END) AS archived
CALL (eligible) {
  UNWIND eligible AS e
  WITH e.score AS score
  ORDER BY score DESC
  LIMIT $arg.limit
  RETURN min(score) AS cut
}
CALL (eligible, cut) {
  UNWIND [e IN eligible WHERE e.score >= cut] AS e
  WITH e.c AS c, e.score AS score
  ORDER BY score DESC,
           CASE WHEN c.updated_at > $arg.now THEN $arg.now ELSE datetime.truncate('microsecond', c.updated_at) END DESC,
           c.seq ASC
  LIMIT $arg.limit
  RETURN collect(c) AS head
}
CALL () {
  OPTIONAL MATCH (t:Capsule)
  WHERE t.id IN $arg.probe_ids AND t.tombstoned_at IS NOT NULL
    AND ($arg.kinds IS NULL OR t.kind IN $arg.kinds)
    AND ($arg.project_id IS NULL OR t.project_id = $arg.project_id)
    AND ($arg.project_prefix IS NULL OR t.project_id = $arg.project_prefix
         OR t.project_id STARTS WITH $arg.project_prefix + '/')
  RETURN count(t) AS tombstoned
}
RETURN size(eligible) AS results_total, superseded, expired, archived, tombstoned,
       [c IN head | c {.id, .kind, .project_id, .headline, .content, .tier,
         updated_us: c.updated_at.epochSeconds * 1000000 + c.updated_at.microsecond,
         hit: [t IN $arg.all_tokens WHERE t IN c.tokens]}] AS head
