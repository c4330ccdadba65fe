// The seq and ord of the task/epic capsules among $arg.ids (the ones about to leave the DAG).
UNWIND $arg.ids AS wanted
MATCH (c:Capsule {id: wanted})
USING INDEX SEEK c:Capsule(id)
WITH c WHERE c.ord IS NOT NULL
RETURN c.seq AS seq, c.ord AS ord
