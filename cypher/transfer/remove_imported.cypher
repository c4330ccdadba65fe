// Remove capsules an import stored (graphsvc.store.transfer.remove_imported), and their edges,
// and take back the counts their maintained `counted` added to the tallies (graphsvc.store.maintain).
// The caller names exactly the ids to remove.
UNWIND $arg.ids AS imported
MATCH (c:Capsule {id: imported})
USING INDEX SEEK c:Capsule(id)
WITH c, c.counted AS section, c.project_id AS project_id
DETACH DELETE c
WITH section, project_id
WHERE section IS NOT NULL
WITH section + '|' + project_id AS key, count(*) AS gone
ORDER BY key
MATCH (t:Tally {key: key})
SET t.tally_lock = true
REMOVE t.tally_lock
WITH t, gone
SET t.listed = t.listed - gone
