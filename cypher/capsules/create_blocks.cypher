// BLOCKS edges between existing task/epic capsules: (a) must be done before (b) starts.
UNWIND $edges AS e
MATCH (a:Capsule {id: e.from})
MATCH (b:Capsule {id: e.to})
MERGE (a)-[:BLOCKS]->(b)
