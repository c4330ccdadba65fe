// What an update needs to decide: the kind, whether it is tombstoned, and the current headline/content.
MATCH (c:Capsule {id: $id})
RETURN c.kind AS kind, c.tombstoned_at AS tombstoned_at, c.headline AS headline, c.content AS content
