// Import: create capsules exactly as exported; instants arrive as ISO strings with nanoseconds.
// datetime(null) is null, so absent valid_to / tombstoned_at stay absent.
UNWIND $rows AS row
CREATE (c:Capsule)
SET c = row
SET c.created_at = datetime(row.created_at),
    c.updated_at = datetime(row.updated_at),
    c.valid_to = datetime(row.valid_to),
    c.tombstoned_at = datetime(row.tombstoned_at)
