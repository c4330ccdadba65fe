// What removing these capsules changes elsewhere: the capsules, not among them, that one of them
// supersedes (their `superseded` may end) or blocks (their readiness may change). Read before the
// removal, in its transaction, and refreshed after it (graphsvc.store.maintain.remove).
UNWIND $arg.ids AS gone
MATCH (c:Capsule {id: gone})
USING INDEX SEEK c:Capsule(id)
MATCH (c)-[r:SUPERSEDES|BLOCKS]->(t:Capsule)
WHERE NOT t.id IN $arg.ids
RETURN DISTINCT type(r) AS type, t.id AS id
ORDER BY type, id
