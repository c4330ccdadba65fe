// Bench-only bulk loader: SUPERSEDES edges (new, old) given by seq (one batch per call).
UNWIND $arg.edges AS e
MATCH (a:Capsule {seq: e[0]})
MATCH (b:Capsule {seq: e[1]})
CREATE (a)-[:SUPERSEDES]->(b)
