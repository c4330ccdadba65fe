// Which of these ids exist, with kind and tombstone state (relate/tombstone checks, before any write).
UNWIND $arg.ids AS ref
OPTIONAL MATCH (c:Capsule {id: ref})
USING INDEX SEEK c:Capsule(id)
RETURN ref AS id, c IS NOT NULL AS exists, c.kind AS kind, c.tombstoned_at IS NOT NULL AS tombstoned,
       c.project_id AS project_id
