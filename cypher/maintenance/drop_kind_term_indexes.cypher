// Schema v4's full-text term indexes, one per kind family, which capsule_terms (cypher/schema.cypher)
// replaces since v5. graphsvc.store.migrate drops them once capsule_terms is online; each statement
// is idempotent, so an interrupted migration runs them again.
DROP INDEX constraint_terms IF EXISTS;

DROP INDEX decision_terms IF EXISTS;

DROP INDEX failure_pattern_terms IF EXISTS;

DROP INDEX task_terms IF EXISTS;

DROP INDEX other_terms IF EXISTS;
