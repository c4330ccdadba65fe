// Wait (up to 60 s) until the schema's indexes are online, so the first reads can use them.
CALL db.awaitIndexes(60)
