// The ids of every capsule in one project subtree ($arg.project_prefix and its sub-projects:
// 'shop' and 'shop/api', never 'shopx'), for `graphsvc demo --reset`.
MATCH (c:Capsule)
WHERE c.project_id = $arg.project_prefix OR c.project_id STARTS WITH $arg.project_prefix + '/'
RETURN c.id AS id
ORDER BY c.seq
