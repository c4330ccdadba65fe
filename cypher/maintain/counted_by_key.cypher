// `graphsvc verify`: the tallies recounted from scratch from each capsule's stored `counted`
// (whose own value verify checks against the raw graph, page by page, before this runs).
MATCH (c:Capsule)
WHERE c.counted IS NOT NULL
RETURN c.counted + '|' + c.project_id AS key, count(*) AS listed
ORDER BY key
