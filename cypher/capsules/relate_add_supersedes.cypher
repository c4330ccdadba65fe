// Add SUPERSEDES edges (new)-[:SUPERSEDES]->(old) between existing capsules; reports which were already there.
UNWIND $edges AS e
MATCH (a:Capsule {id: e.from})
MATCH (b:Capsule {id: e.to})
WITH a, b, e, EXISTS { (a)-[:SUPERSEDES]->(b) } AS existed
MERGE (a)-[:SUPERSEDES]->(b)
RETURN e.from AS from, e.to AS to, existed
