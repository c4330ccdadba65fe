// The taught aliases (SPEC §10) of the given scopes ('' = store-wide, else a project_prefix), by scope then term.
MATCH (a:Alias)
WHERE a.scope IN $arg.scopes
RETURN a.scope AS scope, a.term AS term, a.aliases AS aliases
ORDER BY scope, term
