// Delete the capsules of one project subtree and their edges (`graphsvc demo --reset`).
// Covers $project_prefix and its sub-projects ('shop' and 'shop/api', never 'shopx');
// every other project, and the id counter, are left alone (ids are never reused).
MATCH (c:Capsule)
WHERE c.project_id = $project_prefix OR c.project_id STARTS WITH $project_prefix + '/'
DETACH DELETE c
RETURN count(c) AS deleted
