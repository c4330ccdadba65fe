// Import: create capsules exactly as exported, each with its kind label; instants arrive as ISO
// strings with nanoseconds. datetime(null) is null, so absent valid_to / tombstoned_at / lease_until
// (a claim's lease, SPEC §12) stay absent.
// Maintained fields arrive in the row (tokens, ord; superseded false until the edges exist), and
// readiness is refreshed after the edges (graphsvc.store.transfer).
UNWIND $arg.rows AS row
CREATE (c:Capsule)
SET c = row.props
SET c:$(row.label)
SET c.created_at = datetime(row.props.created_at),
    c.updated_at = datetime(row.props.updated_at),
    c.valid_to = datetime(row.props.valid_to),
    c.tombstoned_at = datetime(row.props.tombstoned_at),
    c.lease_until = datetime(row.props.lease_until)
