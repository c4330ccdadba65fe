// Import: SUPERSEDES edges between capsules created by the same import.
UNWIND $edges AS e
MATCH (a:Capsule {id: e.from})
MATCH (b:Capsule {id: e.to})
CREATE (a)-[:SUPERSEDES]->(b)
