// Delete every node and relationship in batches (test isolation and `graphsvc import --replace`).
// Must run in an auto-commit transaction because of CALL ... IN TRANSACTIONS.
MATCH (n)
CALL (n) { DETACH DELETE n } IN TRANSACTIONS OF 10000 ROWS
