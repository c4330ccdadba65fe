// Create the validated capsules of one batch (properties prepared by graphsvc.store.ingest).
// The request instant is sent ONCE as $now rather than in every row: packing thousands of
// identical datetimes was most of the client's time in a 1000-item batch.
UNWIND $rows AS row
CREATE (c:Capsule)
SET c = row, c.created_at = $now, c.updated_at = $now
