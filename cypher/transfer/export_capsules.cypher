// Export: the next page of capsules in seq order (keyset on seq), every stored property.
MATCH (c:Capsule)
WHERE c.seq > $after
RETURN properties(c) AS props
ORDER BY c.seq ASC
LIMIT $limit
