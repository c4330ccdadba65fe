// Bench only: flush the page cache and rotate the transaction log now (Neo4j's own procedure), so a
// burst of writes before a timed round does not land its checkpoint inside it.
CALL db.checkpoint() YIELD success
RETURN success
