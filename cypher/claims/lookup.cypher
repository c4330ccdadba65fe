// memory_claim with task_id and memory_release (SPEC §12, graphsvc.store.claims): the node as the
// fence and the error messages need it. A read of committed state: the decision itself is taken
// under the node's lock by claims/take.cypher or claims/release.cypher.
MATCH (c:Capsule {id: $arg.id})
USING INDEX SEEK c:Capsule(id)
RETURN c.id AS id, c.project_id AS project_id, c.kind AS kind, c.tombstoned_at IS NOT NULL AS tombstoned
