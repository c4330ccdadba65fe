// Mark or unmark BLOCKS edges [{from, to, marked}] (seqs) after a component was ordered again.
UNWIND $arg.edges AS e
MATCH (a:Capsule {seq: e.from})-[r:BLOCKS]->(b:Capsule {seq: e.to})
USING INDEX SEEK a:Capsule(seq)
SET r.closes_loop = CASE WHEN e.marked THEN true END
