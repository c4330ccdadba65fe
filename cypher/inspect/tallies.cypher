// The per-project tallies behind a pack's totals (schema v3; graphsvc.store.maintain), for Neo4j Browser.
//
//   :param project_prefix => 'shop'      (null: every project)
//
// One row per project and section: `listed` is the maintained count of capsules that section lists
// (constraints: active and live; decisions: live; traps: not tombstoned; ready: ready tasks/epics),
// `expired` those of them whose valid_to has passed now, and `in_totals` what a pack fenced to that
// project shows as the section's total right now (traps ignore expiry). `graphsvc verify` recounts them.
MATCH (t:Tally)
WHERE $project_prefix IS NULL OR t.project_id = $project_prefix OR t.project_id STARTS WITH $project_prefix + '/'
CALL (t) {
  MATCH (c:Capsule)
  WHERE t.section <> 'traps' AND c.counted = t.section AND c.valid_to <= datetime() AND c.project_id = t.project_id
  RETURN count(c) AS expired
}
RETURN t.project_id AS project_id, t.section AS section, t.listed AS listed, expired, t.listed - expired AS in_totals
ORDER BY project_id, section
