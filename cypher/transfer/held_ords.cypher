// Import: which of these BLOCKS order positions a stored capsule already holds, and which capsule
// (the ords the file's order gives its capsules that are not stored yet must be free).
UNWIND $arg.ords AS wanted
MATCH (c:Capsule)
USING INDEX SEEK c:Capsule(ord)
WHERE c.ord = wanted
RETURN c.ord AS ord, c.id AS id
