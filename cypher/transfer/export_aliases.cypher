// Export: every taught alias set (SPEC §10), by scope then term (few: no paging).
MATCH (a:Alias)
RETURN a.scope AS scope, a.term AS term, a.aliases AS aliases
ORDER BY scope, term
