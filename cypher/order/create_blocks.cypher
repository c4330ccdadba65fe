// Create BLOCKS edges (a must be done before b starts); `closes_loop: true` marks an edge the
// topological order could not place (it closed a loop when it was inserted). Reports edges
// that were already there (MERGE leaves them, and their mark, as they are).
UNWIND $arg.edges AS e
MATCH (a:Capsule {id: e.from})
USING INDEX SEEK a:Capsule(id)
MATCH (b:Capsule {id: e.to})
USING INDEX SEEK b:Capsule(id)
WITH a, b, e, EXISTS { (a)-[:BLOCKS]->(b) } AS existed
MERGE (a)-[r:BLOCKS]->(b)
ON CREATE SET r.closes_loop = CASE WHEN e.closes_loop THEN true END
RETURN e.from AS from, e.to AS to, existed
