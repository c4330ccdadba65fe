// Export: the next page of edges of one type, ordered by (from seq, to seq), keyset after ($from_seq, $to_seq).
// `a.seq >= $from_seq` lets the planner seek the seq index instead of rescanning every edge per page.
MATCH (a:Capsule)
WHERE a.seq >= $from_seq
MATCH (a)-[r]->(b:Capsule)
WHERE type(r) = $type AND (a.seq > $from_seq OR b.seq > $to_seq)
RETURN a.id AS from, a.seq AS from_seq, b.id AS to, b.seq AS to_seq
ORDER BY from_seq ASC, to_seq ASC
LIMIT $limit
