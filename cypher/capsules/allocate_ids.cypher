// Reserve $arg.count consecutive capsule numbers from the one atomic counter.
// MERGE on the uniquely-constrained name plus the write lock taken by SET
// serialises concurrent writers, so numbers are unique and gap-free.
MERGE (k:IdCounter {name: 'capsule'})
ON CREATE SET k.value = 0
SET k.value = k.value + $arg.count
RETURN k.value - $arg.count + 1 AS first
