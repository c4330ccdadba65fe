// An import's alias lines, checked before it writes: the stored aliases of the nodes they would merge into.
UNWIND $arg.keys AS wanted
MATCH (a:Alias {key: wanted})
RETURN a.key AS key, a.aliases AS aliases
