// Taught aliases (SPEC §10; Neo4j Browser): each term's aliases per scope ('' = the whole store).
//
//   :param project_prefix => 'shop'      (null = every scope; else the scopes a retrieve fenced to it uses)
//
// A prefixed set holds for retrieves fenced inside its prefix; retrieve also reads every alias both ways.
MATCH (a:Alias)
WHERE $project_prefix IS NULL
   OR a.scope = ''
   OR $project_prefix = a.scope
   OR $project_prefix STARTS WITH a.scope + '/'
RETURN a.scope AS scope, a.term AS term, a.aliases AS aliases, a
ORDER BY scope, term
