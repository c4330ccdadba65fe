// Bench-only bulk loader: create prepared capsules (one batch per call). Not used by the service.
UNWIND $arg.rows AS row
CREATE (c:Capsule)
SET c = row
