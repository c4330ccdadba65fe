// `graphsvc migrate` from schema v4: one page of handoff capsules (keyset on seq), for their `agent`
// to be recorded from the session that left them (maintain/write_handoff_agents). Handoffs are few:
// the label's own nodes are walked, not every capsule.
MATCH (h:Handoff)
WHERE h.seq > $arg.after
WITH h ORDER BY h.seq ASC LIMIT $arg.limit
RETURN h.id AS id, h.seq AS seq
