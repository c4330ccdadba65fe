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

// Schema v2 (graphsvc.store.maintain): the pack seeks the fence's ready tasks through this index
// (`ready` is true on ready tasks/epics and absent elsewhere, so only they are indexed) ...
CREATE INDEX capsule_ready_project IF NOT EXISTS
FOR (c:Capsule) ON (c.ready, c.project_id);

// ... proves "no cycle" by looking up the BLOCKS edges that closed a loop (few or none) ...
CREATE INDEX blocks_closes_loop IF NOT EXISTS
FOR ()-[r:BLOCKS]-() ON (r.closes_loop);

// ... and the store records its schema version and the lock BLOCKS insertions take.
CREATE CONSTRAINT schema_version_name_unique IF NOT EXISTS
FOR (v:SchemaVersion) REQUIRE v.name IS UNIQUE;

CREATE CONSTRAINT graphsvc_lock_name_unique IF NOT EXISTS
FOR (l:GraphsvcLock) REQUIRE l.name IS UNIQUE;

// Kinds as labels (SPEC §1): the pack's ranked sections seek their kind's project index, and the
// cycle search seeks the open tasks/epics (only they have a status) of the fence.
CREATE INDEX constraint_project IF NOT EXISTS
FOR (c:Constraint) ON (c.project_id);

CREATE INDEX decision_project IF NOT EXISTS
FOR (c:Decision) ON (c.project_id);

CREATE INDEX failure_pattern_project IF NOT EXISTS
FOR (c:FailurePattern) ON (c.project_id);

CREATE INDEX capsule_status_project IF NOT EXISTS
FOR (c:Capsule) ON (c.status, c.project_id);

// The BLOCKS order's positions: a batch of edges against the order reads the ord intervals they span.
CREATE INDEX capsule_ord IF NOT EXISTS
FOR (c:Capsule) ON (c.ord);
