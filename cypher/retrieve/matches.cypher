// memory_retrieve (SPEC §8): the raw matches of a request's groups, in ONE statement and one row.
// Candidates come from the full-text `capsule_terms` index over the maintained folded `tokens`:
// each of $arg.queries ORs the request's alternatives, an alternative being one token set of a group
// (the caller's term or one of its aliases) whose tokens are all required, and requires the
// request's kinds and exact project when it names them. The match is then decided HERE from the
// stored tokens (`all(t IN alt.tokens WHERE t IN c.tokens)`), so Lucene only finds candidates.
// Tombstoned capsules never match by text. Each live match gets the first eligibility rule it
// fails (superseded, expired at $arg.now, archived) or none; only the eligible are ranked, with
// graphsvc.core.retrieve's key (groups covered desc, caller tokens covered desc, updated_at
// clamped to $arg.now and truncated to microseconds desc, seq asc), and only the first $arg.limit
// leave Neo4j, with the request tokens each holds (`hit`) so Python names its matched terms.
// The probe: $arg.probe_ids (terms that are exactly a capsule id) counts the tombstoned ones in
// the fences and kinds.
CALL () {
  UNWIND $arg.queries AS query
  CALL db.index.fulltext.queryNodes('capsule_terms', query) YIELD node
  RETURN DISTINCT node AS c
}
WITH c
WHERE c.tombstoned_at IS NULL
  AND ($arg.kinds IS NULL OR c.kind IN $arg.kinds)
  AND ($arg.project_id IS NULL OR c.project_id = $arg.project_id)
  AND ($arg.project_prefix IS NULL OR c.project_id = $arg.project_prefix
       OR c.project_id STARTS WITH $arg.project_prefix + '/')
WITH c, [alt IN $arg.alternatives WHERE all(t IN alt.tokens WHERE t IN c.tokens) | alt.group] AS hit_groups
WHERE size(hit_groups) > 0
WITH c, size(reduce(seen = [], g IN hit_groups | CASE WHEN g IN seen THEN seen ELSE seen + g END)) AS groups,
     CASE WHEN coalesce(c.superseded, false) THEN 'superseded'
          WHEN c.valid_to IS NOT NULL AND c.valid_to <= $arg.now THEN 'expired'
          WHEN c.tier = 'archived' THEN 'archived' END AS reason
WITH c, groups, reason, CASE WHEN reason IS NULL THEN size([t IN $arg.caller_tokens WHERE t IN c.tokens]) ELSE 0 END AS tokens
ORDER BY groups DESC, tokens DESC,
         CASE WHEN c.updated_at > $arg.now THEN $arg.now ELSE datetime.truncate('microsecond', c.updated_at) END DESC,
         c.seq ASC
WITH collect(CASE WHEN reason IS NULL THEN c END) AS eligible,
     sum(CASE reason WHEN 'superseded' THEN 1 ELSE 0 END) AS superseded,
     sum(CASE reason WHEN 'expired' THEN 1 ELSE 0 END) AS expired,
     sum(CASE reason WHEN 'archived' THEN 1 ELSE 0 END) AS archived
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
       [c IN eligible[0..$arg.limit] | c {.id, .kind, .project_id, .headline, .content, .tier,
         updated_us: c.updated_at.epochSeconds * 1000000 + c.updated_at.microsecond,
         hit: [t IN $arg.all_tokens WHERE t IN c.tokens]}] AS head
