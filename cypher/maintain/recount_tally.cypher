// `graphsvc verify --repair`: one tally set to its from-scratch count. The tally's lock is taken
// before the capsules are counted, so a write moving a count meanwhile lands on top of it.
MERGE (t:Tally {key: $section + '|' + $project_id})
  ON CREATE SET t.project_id = $project_id, t.section = $section, t.listed = 0
SET t.tally_lock = true
REMOVE t.tally_lock
WITH t
SET t.listed = COUNT { MATCH (c:Capsule) WHERE c.project_id = $project_id AND c.counted = $section }
