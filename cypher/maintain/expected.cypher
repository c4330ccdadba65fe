// `graphsvc verify`: every maintained field of one page of capsules (keyset on seq), recomputed
// from scratch from the raw graph, beside what is stored. Python compares them (and the folded
// tokens, which only Python can compute) and reports drift; --repair rewrites the page. A handoff's
// `agent` is compared with the agent of the session that left it (schema v5; none without a session).
MATCH (c:Capsule)
WHERE c.seq > $arg.after
WITH c ORDER BY c.seq ASC LIMIT $arg.limit
WITH c,
     EXISTS { MATCH (s:Capsule)-[:SUPERSEDES]->(c) WHERE s.tombstoned_at IS NULL } AS superseded,
     CASE WHEN c.kind IN ['task', 'epic'] THEN COUNT {
       MATCH (x:Capsule)-[:BLOCKS]->(c)
       WHERE x.tombstoned_at IS NULL
         AND coalesce(x.status, 'open') <> 'done'
         AND NOT EXISTS { MATCH (s:Capsule)-[:SUPERSEDES]->(x) WHERE s.tombstoned_at IS NULL }
     } END AS open_blockers
WITH c, superseded, open_blockers,
     CASE WHEN c.kind IN ['task', 'epic'] AND c.status = 'open' AND c.tombstoned_at IS NULL
               AND NOT superseded AND open_blockers = 0 THEN true END AS ready
RETURN c.id AS id, c.seq AS seq, c.kind AS kind, c.headline AS headline, c.content AS content,
       labels(c) AS labels, c.tokens AS tokens, c.ord AS ord,
       c.superseded AS stored_superseded, superseded,
       c.open_blockers AS stored_open_blockers, open_blockers,
       c.ready AS stored_ready, ready,
       c.counted AS stored_counted,
       c.census AS stored_census,
       c.kind + CASE WHEN c.tombstoned_at IS NOT NULL THEN ':tombstoned'
                     WHEN superseded THEN ':superseded'
                     WHEN c.status = 'open' AND coalesce(open_blockers, 0) > 0 THEN ':blocked'
                     ELSE ':current' END AS census,
       c.agent AS agent,
       CASE WHEN c.kind = 'handoff' THEN [(s:Session)-[:HANDED_OFF]->(c) | s.agent][0] END AS session_agent,
       CASE WHEN c.tombstoned_at IS NOT NULL THEN null
            WHEN c.kind = 'constraint' AND c.tier = 'active' AND NOT superseded THEN 'constraints'
            WHEN c.kind = 'decision' AND NOT superseded THEN 'decisions'
            WHEN c.kind = 'failure_pattern' THEN 'traps'
            WHEN ready THEN 'ready' END AS counted
