// Maintained state (graphsvc.store.maintain), step 3 of 3: the pack section each given capsule
// counts in (`counted`), its digest census (`census`), and the per-project tallies both are counted in:
//   'constraints'  an active constraint, not tombstoned, not superseded
//   'decisions'    a decision, not tombstoned, not superseded
//   'traps'        a failure pattern, not tombstoned (stale and superseded traps stay)
//   'ready'        a task/epic whose maintained `ready` is true
//   census         '<kind>:tombstoned', else '<kind>:superseded', else for an open task/epic with open
//                  blockers '<kind>:blocked' (SPEC §9's blocked section), else '<kind>:current' (SPEC §9's
//                  states but expiry: blocked and current are live or expired)
// Expiry is NOT part of either (the request clock decides it): the reads subtract the expired ones.
// A capsule whose section or census changed moves one count from its old tally to the new one: a
// pack section's is (:Tally {key: section|project}), a census's (:CensusTally {key: census|project}),
// a label of its own so the pack's head, which reads the fence's tallies, never reads the census
// ones. Both locks (capsule, then tally, all tallies in key order) are taken before the values they
// change are read, so concurrent writers add up (see refresh_superseded).
UNWIND $arg.ids AS wanted
MATCH (c:Capsule {id: wanted})
USING INDEX SEEK c:Capsule(id)
SET c.maintained_lock = true
REMOVE c.maintained_lock
WITH c, c.counted AS was, c.census AS was_census,
     CASE WHEN c.tombstoned_at IS NOT NULL THEN null
          WHEN c.kind = 'constraint' AND c.tier = 'active' AND NOT c.superseded THEN 'constraints'
          WHEN c.kind = 'decision' AND NOT c.superseded THEN 'decisions'
          WHEN c.kind = 'failure_pattern' THEN 'traps'
          WHEN c.ready = true THEN 'ready' END AS section,
     c.kind + CASE WHEN c.tombstoned_at IS NOT NULL THEN ':tombstoned'
                   WHEN c.superseded THEN ':superseded'
                   WHEN c.status = 'open' AND coalesce(c.open_blockers, 0) > 0 THEN ':blocked'
                   ELSE ':current' END AS census
WHERE coalesce(was, '') <> coalesce(section, '') OR coalesce(was_census, '') <> census
SET c.counted = section, c.census = census
WITH c.project_id AS project_id,
     CASE WHEN coalesce(was, '') <> coalesce(section, '') THEN [[was, -1], [section, 1]] ELSE [] END
     + CASE WHEN coalesce(was_census, '') <> census THEN [[was_census, -1], [census, 1]] ELSE [] END AS moves
UNWIND moves AS move
WITH project_id, move[0] AS section, move[1] AS delta
WHERE section IS NOT NULL
WITH section + '|' + project_id AS key, project_id, section, sum(delta) AS delta
ORDER BY key
CALL (key, project_id, section, delta) {
  WITH * WHERE NOT section CONTAINS ':'
  MERGE (t:Tally {key: key})
    ON CREATE SET t.project_id = project_id, t.section = section, t.listed = 0
  SET t.tally_lock = true
  REMOVE t.tally_lock
  WITH t, delta
  SET t.listed = t.listed + delta
}
CALL (key, project_id, section, delta) {
  WITH * WHERE section CONTAINS ':'
  MERGE (t:CensusTally {key: key})
    ON CREATE SET t.project_id = project_id, t.section = section, t.listed = 0
  SET t.tally_lock = true
  REMOVE t.tally_lock
  WITH t, delta
  SET t.listed = t.listed + delta
}
