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

// Schema v2 (graphsvc.store.maintain): the pack proves "no cycle" by looking up the BLOCKS edges
// that closed a loop (few or none) ...
CREATE INDEX blocks_closes_loop IF NOT EXISTS
FOR ()-[r:BLOCKS]-() ON (r.closes_loop);

// ... and the store records its schema version and the locks that BLOCKS insertions ('blocks_order') and
// handoff finishes (one per agent and project, graphsvc.store.sessions) take.
CREATE CONSTRAINT schema_version_name_unique IF NOT EXISTS
FOR (v:SchemaVersion) REQUIRE v.name IS UNIQUE;

CREATE CONSTRAINT graphsvc_lock_name_unique IF NOT EXISTS
FOR (l:GraphsvcLock) REQUIRE l.name IS UNIQUE;

// Kinds as labels (SPEC §1): the cycle search seeks the open tasks/epics (only they have a status)
// of the fence.
CREATE INDEX capsule_status_project IF NOT EXISTS
FOR (c:Capsule) ON (c.status, c.project_id);

// The BLOCKS order's positions: a batch of edges against the order reads the ord intervals they span.
CREATE INDEX capsule_ord IF NOT EXISTS
FOR (c:Capsule) ON (c.ord);

// Ranked sections (cypher/bootstrap/sections_*.cypher): each reads its decay order in order from
// these range indexes and stops after the rows it can show, instead of sorting every live row:
// with no fence the section's own (counted, updated_at), with a fence (counted, project_id,
// updated_at) per project of the fence. `counted` is the maintained section a capsule counts in
// (graphsvc.store.maintain: 'constraints', 'decisions', 'traps', 'ready', or absent), so the
// index holds only listed rows and a section seeks exactly its live ones (expiry aside).
CREATE INDEX capsule_counted_updated_at IF NOT EXISTS
FOR (c:Capsule) ON (c.counted, c.updated_at);

CREATE INDEX capsule_counted_project_updated_at IF NOT EXISTS
FOR (c:Capsule) ON (c.counted, c.project_id, c.updated_at);

// ... and with terms, the rows covering at least one term token (the only rows terms can lift
// above that order) are found through the maintained folded `tokens` (a list of strings: the
// whitespace analyzer keeps each folded token one term, split only past Lucene's 255-char token limit).
// Schema v5: ONE full-text index holds every capsule; a query names its kinds with a required
// `kind` clause (graphsvc.store.bootstrap.kind_clause: `kind` never changes, so it costs no index
// update). Lucene refreshes each index a transaction changed when it commits, ~10 ms of Neo4j CPU
// per index touched, so one index instead of one per kind family (v4's constraint_terms,
// decision_terms, failure_pattern_terms, task_terms, other_terms, dropped by `graphsvc migrate`)
// makes an ingest of mixed kinds pay that once. Not eventually consistent: a pack reads its writes.
// The index also holds `project_id`, so a fenced pack's query names the fence's projects and Lucene
// returns only the fence's rows (a project id is at most 200 characters, one with whitespace is
// split into terms and matched as a phrase, a superset the statement filters).
CREATE FULLTEXT INDEX capsule_terms IF NOT EXISTS
FOR (c:Capsule) ON EACH [c.tokens, c.project_id, c.kind]
OPTIONS {indexConfig: {`fulltext.analyzer`: 'whitespace'}};

// Replaced by the indexes above (a store written before them drops them here).
DROP INDEX constraint_tokens IF EXISTS;

DROP INDEX decision_tokens IF EXISTS;

DROP INDEX failure_pattern_tokens IF EXISTS;

DROP INDEX task_tokens IF EXISTS;

DROP INDEX constraint_project IF EXISTS;

DROP INDEX decision_project IF EXISTS;

DROP INDEX failure_pattern_project IF EXISTS;

DROP INDEX capsule_ready_project IF EXISTS;

// Replaced by the two (counted, ...) indexes above: one per kind and fence shape, each of whose
// rows the section then had to filter for liveness.
DROP INDEX constraint_updated_at IF EXISTS;

DROP INDEX decision_updated_at IF EXISTS;

DROP INDEX failure_pattern_updated_at IF EXISTS;

DROP INDEX capsule_ready_updated_at IF EXISTS;

DROP INDEX constraint_project_updated_at IF EXISTS;

DROP INDEX decision_project_updated_at IF EXISTS;

DROP INDEX failure_pattern_project_updated_at IF EXISTS;

DROP INDEX capsule_ready_project_updated_at IF EXISTS;

// Schema v3: per-project section tallies (graphsvc.store.maintain), so a pack's totals cost the
// fence's projects, not its capsules. And the listed capsules that carry a valid_to, by section and
// project, so the fence's expired ones (a read-time filter) are subtracted through a seek.
CREATE CONSTRAINT tally_key_unique IF NOT EXISTS
FOR (t:Tally) REQUIRE t.key IS UNIQUE;

CREATE INDEX tally_project IF NOT EXISTS
FOR (t:Tally) ON (t.project_id);

// Schema v6: the census tallies a digest's counts read (graphsvc.store.maintain), apart from the
// pack's so the pack's head never reads them.
CREATE CONSTRAINT census_tally_key_unique IF NOT EXISTS
FOR (t:CensusTally) REQUIRE t.key IS UNIQUE;

CREATE INDEX census_tally_project IF NOT EXISTS
FOR (t:CensusTally) ON (t.project_id);

CREATE INDEX capsule_counted_project_valid_to IF NOT EXISTS
FOR (c:Capsule) ON (c.counted, c.project_id, c.valid_to);

// Replaced by the one above (the store-wide seek read every expired capsule of the store).
DROP INDEX capsule_counted_valid_to IF EXISTS;

// Taught aliases (SPEC §10, graphsvc.store.aliases): one (:Alias) node per term and scope, `key` =
// scope + '|' + term, `scope` = its project_prefix or '' for the whole store. A retrieve reads the
// scopes enclosing its fence.
CREATE CONSTRAINT alias_key_unique IF NOT EXISTS
FOR (a:Alias) REQUIRE a.key IS UNIQUE;

CREATE INDEX alias_scope IF NOT EXISTS
FOR (a:Alias) ON (a.scope);

// Sessions (SPEC §11, graphsvc.store.sessions): `(:Session {id, agent, project_id, started_at,
// finished_at?, finish_hash?})-[:HANDED_OFF]->(:Capsule:Handoff)`. Ids come from the IdCounter named
// 'session'.
CREATE CONSTRAINT session_id_unique IF NOT EXISTS
FOR (s:Session) REQUIRE s.id IS UNIQUE;

// Schema v5: a handoff capsule records the `agent` whose session left it, and the previous handoff
// of an agent and project is found on the capsules (sessions are not exported, capsules are).
CREATE INDEX handoff_agent_project IF NOT EXISTS
FOR (h:Handoff) ON (h.agent, h.project_id);

// Replaced by the one above (it found the previous handoff through the sessions).
DROP INDEX session_agent_project IF EXISTS;
// API keys (issue 27, graphsvc.store.keys): looked up by id on every keyed request.
CREATE CONSTRAINT api_key_id_unique IF NOT EXISTS
FOR (k:ApiKey) REQUIRE k.id IS UNIQUE;

// Change detection (SPEC §13, graphsvc.store.changes): one (:ProjectChange {project_id, seq,
// changed_at_ms}) per project, bumped by every write transaction that touches the project: the
// watchers' poller reads the recently changed ones through changed_at_ms. Not capsules: no read,
// export or audit matches the label.
CREATE CONSTRAINT project_change_unique IF NOT EXISTS
FOR (m:ProjectChange) REQUIRE m.project_id IS UNIQUE;

CREATE INDEX project_change_at IF NOT EXISTS
FOR (m:ProjectChange) ON (m.changed_at_ms);

// ... and the instants at which a pack changes with no write: the next valid_to (and lease_until,
// SPEC §12) in a watcher's scope, store-wide or per project.
CREATE INDEX capsule_valid_to IF NOT EXISTS
FOR (c:Capsule) ON (c.valid_to);

CREATE INDEX capsule_project_valid_to IF NOT EXISTS
FOR (c:Capsule) ON (c.project_id, c.valid_to);

// memory_digest (cypher/digest/sections.cypher, schema v6) reads what it shows in order instead of
// sorting its fence: the newest live capsules per project of the fence, and the most blocked tasks
// per blocked census tally (`census`, graphsvc.store.maintain; only tasks and epics have
// open_blockers, so only they are in the second index). The counts and expired ones come from the
// tallies and the (project_id, valid_to) index above.
CREATE INDEX capsule_project_updated_at IF NOT EXISTS
FOR (c:Capsule) ON (c.project_id, c.updated_at);

CREATE INDEX capsule_census_project_blockers IF NOT EXISTS
FOR (c:Capsule) ON (c.census, c.project_id, c.open_blockers);

// Claims (SPEC §12, graphsvc.store.claims): a lease is `lease_agent`, `lease_until` (and `lease_key`
// when an API key took it) on the task or epic itself. A pack finds the live leases through this
// index (`lease_until > now`: leases are few, so the cost is theirs, not the fence's). Nothing to
// backfill, so no schema version: a store without the index simply has no leases yet.
CREATE INDEX capsule_lease_until IF NOT EXISTS
FOR (c:Capsule) ON (c.lease_until);

CREATE INDEX capsule_project_lease_until IF NOT EXISTS
FOR (c:Capsule) ON (c.project_id, c.lease_until);
