// `graphsvc verify --repair`: one tally set to its from-scratch count. The tally's lock is taken
// before the capsules are counted, so a write moving a count meanwhile lands on top of it.
MERGE (t:Tally {key: $arg.section + '|' + $arg.project_id})
  ON CREATE SET t.project_id = $arg.project_id, t.section = $arg.section, t.listed = 0
SET t.tally_lock = true
REMOVE t.tally_lock
WITH t
SET t.listed = COUNT { MATCH (c:Capsule) WHERE c.project_id = $arg.project_id AND c.counted = $arg.section }
