// Maintained state (graphsvc.store.maintain), step 3 of 3: the pack section each given capsule
// counts in (`counted`), and the per-project tallies the pack's totals read:
//   'constraints'  an active constraint, not tombstoned, not superseded
//   'decisions'    a decision, not tombstoned, not superseded
//   'traps'        a failure pattern, not tombstoned (stale and superseded traps stay)
//   'ready'        a task/epic whose maintained `ready` is true
// Expiry is NOT part of it (the request clock decides it): the pack subtracts the expired ones.
// A capsule whose section changed moves one count from its old (:Tally {key: section|project})
// to the new one. Both locks (capsule, then tally, in key order) are taken before the values
// they change are read, so concurrent writers add up (see refresh_superseded).
UNWIND $arg.ids AS wanted
MATCH (c:Capsule {id: wanted})
USING INDEX SEEK c:Capsule(id)
SET c.maintained_lock = true
REMOVE c.maintained_lock
WITH c, c.counted AS was,
     CASE WHEN c.tombstoned_at IS NOT NULL THEN null
          WHEN c.kind = 'constraint' AND c.tier = 'active' AND NOT c.superseded THEN 'constraints'
          WHEN c.kind = 'decision' AND NOT c.superseded THEN 'decisions'
          WHEN c.kind = 'failure_pattern' THEN 'traps'
          WHEN c.ready = true THEN 'ready' END AS section
WHERE coalesce(was, '') <> coalesce(section, '')
SET c.counted = section
WITH c.project_id AS project_id, [[was, -1], [section, 1]] AS moves
UNWIND moves AS move
WITH project_id, move[0] AS section, move[1] AS delta
WHERE section IS NOT NULL
WITH section + '|' + project_id AS key, project_id, section, sum(delta) AS delta
ORDER BY key
MERGE (t:Tally {key: key})
  ON CREATE SET t.project_id = project_id, t.section = section, t.listed = 0
SET t.tally_lock = true
REMOVE t.tally_lock
WITH t, delta
SET t.listed = t.listed + delta
