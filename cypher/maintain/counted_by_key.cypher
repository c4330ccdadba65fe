// `graphsvc verify`: the tallies recounted from scratch from each capsule's stored `counted` and
// `census` (whose own values verify checks against the raw graph, page by page, before this runs).
MATCH (c:Capsule)
UNWIND [c.counted, c.census] AS section
WITH section, c.project_id AS project_id
WHERE section IS NOT NULL
RETURN section + '|' + project_id AS key, count(*) AS listed
ORDER BY key
