// Add SUPERSEDES edges (new)-[:SUPERSEDES]->(old) between existing capsules; reports which were already there.
UNWIND $arg.edges AS e
MATCH (a:Capsule {id: e.from})
USING INDEX SEEK a:Capsule(id)
MATCH (b:Capsule {id: e.to})
USING INDEX SEEK b:Capsule(id)
WITH a, b, e, EXISTS { (a)-[:SUPERSEDES]->(b) } AS existed
MERGE (a)-[:SUPERSEDES]->(b)
RETURN e.from AS from, e.to AS to, existed
