// SPEC §13: the earliest `valid_to` and `lease_until` after $arg.now in the whole store: the next
// instant at which a pack can change without a write. Each is one ordered index seek.
CALL {
  MATCH (c:Capsule)
  USING INDEX c:Capsule(valid_to)
  WHERE c.valid_to > $arg.now AND c.tombstoned_at IS NULL
  WITH c.valid_to AS instant ORDER BY instant LIMIT 1
  RETURN collect(instant) AS valid_to
}
CALL {
  MATCH (c:Capsule)
  USING INDEX c:Capsule(lease_until)
  WHERE c.lease_until > $arg.now AND c.tombstoned_at IS NULL
  WITH c.lease_until AS instant ORDER BY instant LIMIT 1
  RETURN collect(instant) AS lease_until
}
RETURN valid_to + lease_until AS instants
