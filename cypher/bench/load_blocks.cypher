// Bench-only bulk loader: BLOCKS edges between capsules given by seq (one batch per call).
UNWIND $arg.edges AS e
MATCH (a:Capsule {seq: e[0]})
MATCH (b:Capsule {seq: e[1]})
CREATE (a)-[:BLOCKS]->(b)
