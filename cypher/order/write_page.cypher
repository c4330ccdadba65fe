// Write a from-scratch order: ords for one page of capsules [{seq, ord}], and the mark of each
// of their outgoing BLOCKS edges (marked: [to seq]; every other edge is unmarked).
UNWIND $arg.rows AS row
MATCH (c:Capsule {seq: row.seq})
SET c.ord = row.ord
WITH c, row
MATCH (c)-[r:BLOCKS]->(t:Capsule)
SET r.closes_loop = CASE WHEN t.seq IN row.marked THEN true END
