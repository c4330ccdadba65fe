// Maintained state (graphsvc.store.maintain): the counts of capsules an ingest created, added to
// their (:Tally {key: section|project}) in one statement ($arg.rows sorted by key, so every writer
// locks tallies in the same order). Each tally is locked before it is read, so concurrent
// writers add up (as in refresh_counted).
UNWIND $arg.rows AS row
MERGE (t:Tally {key: row.key})
  ON CREATE SET t.project_id = row.project_id, t.section = row.section, t.listed = 0
SET t.tally_lock = true
REMOVE t.tally_lock
WITH t, row
SET t.listed = t.listed + row.delta
