// Import: SUPERSEDES edges between capsules created by the same import.
UNWIND $arg.edges AS e
MATCH (a:Capsule {id: e.from})
USING INDEX SEEK a:Capsule(id)
MATCH (b:Capsule {id: e.to})
USING INDEX SEEK b:Capsule(id)
CREATE (a)-[:SUPERSEDES]->(b)
