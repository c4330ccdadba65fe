// Create the validated capsules of one batch (properties prepared by graphsvc.store.ingest).
UNWIND $rows AS row
CREATE (c:Capsule)
SET c = row
