// memory_alias: the term's new alias set in its scope (locked by aliases/lock); an empty set deletes the node.
MATCH (a:Alias {key: $arg.key})
SET a.aliases = $arg.aliases,
    a.project_prefix = CASE WHEN $arg.scope = '' THEN null ELSE $arg.scope END
WITH a
WHERE size($arg.aliases) = 0
DELETE a
