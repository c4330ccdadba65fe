// Import: create capsules exactly as exported, each with its kind label; instants arrive apart
// from the other properties, as ISO strings with nanoseconds, so each property is written once.
// datetime(null) is null, so an absent valid_to / tombstoned_at / lease_until (a claim's lease,
// SPEC §12) stays absent. Maintained fields
// arrive in the props (tokens, ord; superseded false until the edges exist), and readiness is
// refreshed after the edges (graphsvc.store.transfer).
UNWIND $arg.rows AS row
CREATE (c:Capsule:$(row.label))
SET c = row.props,
    c.created_at = datetime(row.created_at),
    c.updated_at = datetime(row.updated_at),
    c.valid_to = datetime(row.valid_to),
    c.tombstoned_at = datetime(row.tombstoned_at),
    c.lease_until = datetime(row.lease_until)
