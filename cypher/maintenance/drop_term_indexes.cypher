// The full-text term index of cypher/schema.cypher, dropped so that applying the schema again
// rebuilds it from the stored tokens. Lucene keeps the documents an update replaced until it
// merges their segments, so an index whose capsules were rewritten (a migration, a bench load)
// answers slower than a fresh one; the bench rebuilds before timing so runs compare.
// Packs with terms fail while the index is missing: never run this beside a serving worker.
DROP INDEX capsule_terms IF EXISTS;
