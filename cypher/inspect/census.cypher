// The census tallies behind a digest's counts (schema v6; graphsvc.store.maintain), for Neo4j Browser.
//
//   :param project_prefix => 'shop'      (null: every project)
//
// One row per project and kind: SPEC §9's counts as a digest fenced to that project shows them right
// now (each capsule once, in the first of tombstoned, superseded, expired, else live), and `blocked`,
// the open live tasks/epics with open blockers. Every state but expiry is maintained on write
// (`census` on each capsule, tallied per project); expiry is read here, as the digest reads it.
// `graphsvc verify` recounts the tallies.
MATCH (t:CensusTally)
WHERE ($project_prefix IS NULL OR t.project_id = $project_prefix OR t.project_id STARTS WITH $project_prefix + '/')
WITH t, split(t.section, ':') AS parts
CALL (t, parts) {
  MATCH (c:Capsule)
  WHERE parts[1] IN ['current', 'blocked'] AND c.project_id = t.project_id AND c.census = t.section
    AND c.valid_to <= datetime()
  RETURN count(c) AS gone
}
WITH t.project_id AS project_id, parts[0] AS kind, parts[1] AS state, t.listed AS n, gone
WITH project_id, kind,
     sum(CASE WHEN state IN ['current', 'blocked'] THEN n - gone ELSE 0 END) AS live,
     sum(CASE state WHEN 'superseded' THEN n ELSE 0 END) AS superseded,
     sum(gone) AS expired,
     sum(CASE state WHEN 'tombstoned' THEN n ELSE 0 END) AS tombstoned,
     sum(CASE state WHEN 'blocked' THEN n - gone ELSE 0 END) AS blocked
WHERE live + superseded + expired + tombstoned > 0
RETURN project_id, kind, live, superseded, expired, tombstoned, blocked
ORDER BY project_id, kind
