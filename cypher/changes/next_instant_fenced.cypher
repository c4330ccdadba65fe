// SPEC §13: the earliest `valid_to` and `lease_until` after $arg.now inside a fence, given as the
// project ids and prefixes it names ($arg.scopes). Each is sought as `project_id STARTS WITH`, a
// superset of the fence (an exact id's sub-projects, a prefix's longer siblings) that can only
// bring a wake-up forward, never miss one. Index seeks on (project_id, valid_to) and
// (project_id, lease_until).
UNWIND $arg.scopes AS scope
CALL {
  WITH scope
  MATCH (c:Capsule)
  USING INDEX c:Capsule(project_id, valid_to)
  WHERE c.project_id STARTS WITH scope AND c.valid_to > $arg.now AND c.tombstoned_at IS NULL
  RETURN min(c.valid_to) AS valid_to
}
CALL {
  WITH scope
  MATCH (c:Capsule)
  USING INDEX c:Capsule(project_id, lease_until)
  WHERE c.project_id STARTS WITH scope AND c.lease_until > $arg.now AND c.tombstoned_at IS NULL
  RETURN min(c.lease_until) AS lease_until
}
WITH collect(valid_to) + collect(lease_until) AS instants
RETURN instants
