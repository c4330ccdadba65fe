// Delete the capsules of one project subtree and their edges (`graphsvc demo --reset`), and the
// subtree's tallies (graphsvc.store.maintain: they count only capsules of their own project).
// Covers $arg.project_prefix and its sub-projects ('shop' and 'shop/api', never 'shopx');
// every other project, and the id counter, are left alone (ids are never reused).
MATCH (c:Capsule)
WHERE c.project_id = $arg.project_prefix OR c.project_id STARTS WITH $arg.project_prefix + '/'
DETACH DELETE c
WITH count(c) AS deleted
CALL () {
  MATCH (t:Tally)
  WHERE t.project_id = $arg.project_prefix OR t.project_id STARTS WITH $arg.project_prefix + '/'
  DETACH DELETE t
}
RETURN deleted
