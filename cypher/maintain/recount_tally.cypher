// `graphsvc verify --repair`: one tally set to its from-scratch count: a pack section's (:Tally) or,
// for a census (its name holds a ':'), a (:CensusTally). The tally's lock is taken before the
// capsules are counted, so a write moving a count meanwhile lands on top of it.
CALL () {
  WITH 1 AS one WHERE NOT $arg.section CONTAINS ':'
  MERGE (t:Tally {key: $arg.section + '|' + $arg.project_id})
    ON CREATE SET t.project_id = $arg.project_id, t.section = $arg.section, t.listed = 0
  SET t.tally_lock = true
  REMOVE t.tally_lock
  WITH t
  SET t.listed = COUNT { MATCH (c:Capsule) WHERE c.project_id = $arg.project_id AND c.counted = $arg.section }
}
CALL () {
  WITH 1 AS one WHERE $arg.section CONTAINS ':'
  MERGE (t:CensusTally {key: $arg.section + '|' + $arg.project_id})
    ON CREATE SET t.project_id = $arg.project_id, t.section = $arg.section, t.listed = 0
  SET t.tally_lock = true
  REMOVE t.tally_lock
  WITH t
  SET t.listed = COUNT { MATCH (c:Capsule) WHERE c.project_id = $arg.project_id AND c.census = $arg.section }
}
