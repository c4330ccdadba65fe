// Maintained state (graphsvc.store.maintain): the counts of capsules an ingest created, added to
// their tallies in one statement: a pack section's (:Tally {key: section|project}) or a census's
// (:CensusTally {key: census|project}, a census holding a ':'). $arg.rows is sorted by key, so every
// writer locks tallies in the same order. Each tally is locked before it is read, so concurrent
// writers add up (as in refresh_counted).
UNWIND $arg.rows AS row
CALL (row) {
  WITH row WHERE NOT row.section CONTAINS ':'
  MERGE (t:Tally {key: row.key})
    ON CREATE SET t.project_id = row.project_id, t.section = row.section, t.listed = 0
  SET t.tally_lock = true
  REMOVE t.tally_lock
  WITH t, row
  SET t.listed = t.listed + row.delta
}
CALL (row) {
  WITH row WHERE row.section CONTAINS ':'
  MERGE (t:CensusTally {key: row.key})
    ON CREATE SET t.project_id = row.project_id, t.section = row.section, t.listed = 0
  SET t.tally_lock = true
  REMOVE t.tally_lock
  WITH t, row
  SET t.listed = t.listed + row.delta
}
