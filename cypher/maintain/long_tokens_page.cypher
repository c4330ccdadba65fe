// `graphsvc migrate` from schema v3: one page of capsules (keyset on seq). For those holding a token
// of more than 127 code points (a token past Lucene's 255 UTF-16 units has that many) it returns the
// text, so Python can fold their tokens again: schema v4 stores such tokens marked
// (graphsvc.store.maintain.stored_token). Every other capsule's tokens are already what v4 stores.
// Each row's id and kind: the page's handoffs get their agent too (schema v5).
MATCH (c:Capsule)
WHERE c.seq > $arg.after
WITH c ORDER BY c.seq ASC LIMIT $arg.limit
RETURN c.seq AS seq, c.id AS id, c.kind AS kind,
       CASE WHEN any(t IN coalesce(c.tokens, []) WHERE size(t) > 127)
            THEN {id: c.id, headline: c.headline, content: c.content, tokens: c.tokens} END AS text
