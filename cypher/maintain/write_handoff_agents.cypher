// Schema v5: a handoff capsule records the agent whose session left it (graphsvc.store.sessions), so
// the agent's previous handoff is found on the capsules. `graphsvc migrate` and `verify --repair` set
// it from the linked session; a handoff with no session (one ingested as a plain capsule, or restored
// from an export written before v5) has no agent to record and keeps none.
UNWIND $arg.ids AS wanted
MATCH (s:Session)-[:HANDED_OFF]->(h:Handoff {id: wanted})
SET h.agent = s.agent
