// `graphsvc migrate` / `verify --repair`: the kind label and the folded tokens (computed by Python) of
// a page of capsules; superseded and readiness follow through maintain/refresh_*. Idempotent.
UNWIND $arg.rows AS row
MATCH (c:Capsule {id: row.id})
USING INDEX SEEK c:Capsule(id)
SET c:$(row.label)
SET c.tokens = row.tokens
