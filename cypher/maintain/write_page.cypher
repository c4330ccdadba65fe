// `graphsvc migrate` / `verify --repair`: write one page of maintained fields computed by Python
// (kind label, folded tokens) and by maintain/expected (superseded, open_blockers, ready).
// Idempotent: writing the same page twice leaves the same graph.
UNWIND $rows AS row
MATCH (c:Capsule {id: row.id})
SET c:$(row.label)
SET c.tokens = row.tokens,
    c.superseded = row.superseded,
    c.open_blockers = row.open_blockers,
    c.ready = row.ready
