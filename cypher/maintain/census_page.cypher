// `graphsvc migrate` from schema v4 or v5: one page of capsules (keyset on seq), whose `census` (and
// census tallies) maintain/refresh_counted then sets; each row's kind, so the page's handoffs get
// their agent too when the store is older than v5.
MATCH (c:Capsule)
WHERE c.seq > $arg.after
WITH c ORDER BY c.seq ASC LIMIT $arg.limit
RETURN c.seq AS seq, c.id AS id, c.kind AS kind
