// Bench-only: what a loaded store holds, so `--reuse` can tell a store it loaded at this size.
// Counts come from Neo4j's count store (no scan).
OPTIONAL MATCH (k:IdCounter {name: 'capsule'})
RETURN k.value AS counter, COUNT { (c:Capsule) } AS capsules, COUNT { ()-[:BLOCKS]->() } AS blocks_edges
