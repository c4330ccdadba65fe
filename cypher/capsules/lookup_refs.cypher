// Which of the referenced ids exist, and what kind are they? (ingest/relate check, before any write)
UNWIND $arg.ids AS ref
OPTIONAL MATCH (c:Capsule {id: ref})
USING INDEX SEEK c:Capsule(id)
RETURN ref AS id, c.kind AS kind, c IS NOT NULL AS exists, c.project_id AS project_id
