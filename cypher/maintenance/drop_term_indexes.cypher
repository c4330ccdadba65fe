// The full-text term indexes of cypher/schema.cypher, dropped so that applying the schema again
// rebuilds them from the stored tokens. Lucene keeps the documents an update replaced until it
// merges their segments, so an index whose capsules were rewritten (a migration, a bench load)
// answers slower than a fresh one; the bench rebuilds before timing so runs compare.
// Packs with terms fail while the indexes are missing: never run this beside a serving worker.
DROP INDEX constraint_terms IF EXISTS;

DROP INDEX decision_terms IF EXISTS;

DROP INDEX failure_pattern_terms IF EXISTS;

DROP INDEX task_terms IF EXISTS;

DROP INDEX other_terms IF EXISTS;
