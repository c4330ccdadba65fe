// Delete the capsules of one project subtree and their edges (`graphsvc demo --reset`), and the
// subtree's tallies, the pack sections' and the census's (graphsvc.store.maintain: they count only
// capsules of their own project).
// $arg.ids: the subtree's capsules as read in this transaction (maintenance/project_tree_ids), so
// exactly the capsules whose neighbours graphsvc.store.maintain.remove refreshes are deleted.
// Covers $arg.project_prefix and its sub-projects ('shop' and 'shop/api', never 'shopx'); every
// other project, and the id counter, are left alone (ids are never reused).
UNWIND $arg.ids AS gone
MATCH (c:Capsule {id: gone})
USING INDEX SEEK c:Capsule(id)
DETACH DELETE c
WITH count(c) AS deleted
CALL () {
  MATCH (t:Tally|CensusTally)
  WHERE t.project_id = $arg.project_prefix OR t.project_id STARTS WITH $arg.project_prefix + '/'
  DETACH DELETE t
}
RETURN deleted
