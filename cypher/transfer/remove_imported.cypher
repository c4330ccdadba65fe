// Remove capsules an import stored (graphsvc.store.transfer.remove_imported), and their edges,
// and take back the counts their maintained `counted` and `census` added to the tallies (graphsvc.store.maintain).
// The caller names exactly the ids to remove.
UNWIND $arg.ids AS imported
MATCH (c:Capsule {id: imported})
USING INDEX SEEK c:Capsule(id)
WITH c, [c.counted, c.census] AS sections, c.project_id AS project_id
DETACH DELETE c
WITH sections, project_id
UNWIND sections AS section
WITH section, project_id
WHERE section IS NOT NULL
// A census names its tally's label (it holds a ':'; a project id may too, so the key cannot tell).
WITH section + '|' + project_id AS key, section CONTAINS ':' AS census, count(*) AS gone
ORDER BY key
CALL (key, census, gone) {
  WITH * WHERE NOT census
  MATCH (t:Tally {key: key})
  SET t.tally_lock = true
  REMOVE t.tally_lock
  WITH t, gone
  SET t.listed = t.listed - gone
}
CALL (key, census, gone) {
  WITH * WHERE census
  MATCH (t:CensusTally {key: key})
  SET t.tally_lock = true
  REMOVE t.tally_lock
  WITH t, gone
  SET t.listed = t.listed - gone
}
