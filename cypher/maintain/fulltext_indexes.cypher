// The store's full-text indexes and their state (graphsvc.store.migrate.term_index_problems).
SHOW FULLTEXT INDEXES YIELD name, state
RETURN name, state ORDER BY name
