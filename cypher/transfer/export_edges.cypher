// Export: the next page of edges of one type, ordered by (from seq, to seq), keyset after ($from_seq, $to_seq).
MATCH (a:Capsule)-[r]->(b:Capsule)
WHERE type(r) = $type
  AND (a.seq > $from_seq OR (a.seq = $from_seq AND b.seq > $to_seq))
RETURN a.id AS from, a.seq AS from_seq, b.id AS to, b.seq AS to_seq
ORDER BY from_seq ASC, to_seq ASC
LIMIT $limit
