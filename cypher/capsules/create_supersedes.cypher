// SUPERSEDES edges: (new) replaces (old).
UNWIND $edges AS e
MATCH (a:Capsule {id: e.from})
MATCH (b:Capsule {id: e.to})
MERGE (a)-[:SUPERSEDES]->(b)
