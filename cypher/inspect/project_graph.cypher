// A project's capsules and the BLOCKS / SUPERSEDES edges between them (SPEC §6, Neo4j Browser).
//
// Paste into Neo4j Browser after setting the fence once per session:
//   :param project_prefix => 'shop'
// The prefix covers the project and its sub-projects ('shop' covers 'shop' and 'shop/web',
// never 'shopx'). `:param project_prefix => null` shows the whole store.
// Captions: Browser's default caption would be an arbitrary property. Type `:style ` in the
// editor, paste the contents of cypher/inspect/browser-style.grass after it and run: Capsule
// nodes are then captioned by `headline`, BLOCKS edges drawn red, SUPERSEDES grey (`:style reset`
// undoes it). Grass selects by label and relationship type only, so it cannot colour by `kind`;
// click a node to see its kind, status and dates.
// Tombstoned capsules are shown too (their `tombstoned_at` property says so): this is the
// operator's view of what is stored, not a pack.
MATCH (c:Capsule)
WHERE $project_prefix IS NULL
   OR c.project_id = $project_prefix
   OR c.project_id STARTS WITH $project_prefix + '/'
OPTIONAL MATCH (c)-[r:BLOCKS|SUPERSEDES]->(other:Capsule)
WHERE $project_prefix IS NULL
   OR other.project_id = $project_prefix
   OR other.project_id STARTS WITH $project_prefix + '/'
RETURN c, r, other
ORDER BY c.seq, type(r), other.seq
