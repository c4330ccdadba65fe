// Add BLOCKS edges between existing capsules (checked before); reports which edges were already there.
UNWIND $edges AS e
MATCH (a:Capsule {id: e.from})
MATCH (b:Capsule {id: e.to})
WITH a, b, e, EXISTS { (a)-[:BLOCKS]->(b) } AS existed
MERGE (a)-[:BLOCKS]->(b)
RETURN e.from AS from, e.to AS to, existed
