// Applied idempotently at start-up (graphsvc.store.db.Database.apply_schema).
// Unique capsule ids, one id counter, and the indexes the fenced reads need.
CREATE CONSTRAINT capsule_id_unique IF NOT EXISTS
FOR (c:Capsule) REQUIRE c.id IS UNIQUE;

CREATE CONSTRAINT id_counter_name_unique IF NOT EXISTS
FOR (k:IdCounter) REQUIRE k.name IS UNIQUE;

CREATE INDEX capsule_project_id IF NOT EXISTS
FOR (c:Capsule) ON (c.project_id);

CREATE INDEX capsule_kind_project IF NOT EXISTS
FOR (c:Capsule) ON (c.kind, c.project_id);

CREATE INDEX capsule_seq IF NOT EXISTS
FOR (c:Capsule) ON (c.seq);

// Idempotency keys (graphsvc.store.idempotency): one node per (caller, key). The uniqueness
// constraint is what makes MERGE lock a key, so two requests racing with one key write once.
// They are not capsules: no capsule read, export or pack matches the IdempotencyKey label.
CREATE CONSTRAINT idempotency_key_unique IF NOT EXISTS
FOR (k:IdempotencyKey) REQUIRE (k.caller, k.key) IS UNIQUE;

CREATE INDEX idempotency_key_expires IF NOT EXISTS
FOR (k:IdempotencyKey) ON (k.expires_at);
