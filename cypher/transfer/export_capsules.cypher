// Export: the next page of capsules in seq order (keyset on seq), every property of SPEC §1 (not
// the fields the service maintains for its reads: import recomputes those), and a claim's lease
// (SPEC §12: lease_agent, lease_until, lease_key) as it stands, live or not. The five instants
// come back as [epochSeconds, nanosecond] (exact, and far cheaper for the driver than DateTime
// objects); any other property is returned as stored.
MATCH (c:Capsule)
WHERE c.seq > $arg.after
WITH c ORDER BY c.seq ASC LIMIT $arg.limit
RETURN c {
  .id, .seq, .project_id, .kind, .tier, .headline, .content, .status, .written_by, .written_by_label, .agent,
  .lease_agent, .lease_key,
  created_at: CASE WHEN c.created_at IS NULL THEN null ELSE [c.created_at.epochSeconds, c.created_at.nanosecond] END,
  updated_at: CASE WHEN c.updated_at IS NULL THEN null ELSE [c.updated_at.epochSeconds, c.updated_at.nanosecond] END,
  valid_to: CASE WHEN c.valid_to IS NULL THEN null ELSE [c.valid_to.epochSeconds, c.valid_to.nanosecond] END,
  tombstoned_at: CASE WHEN c.tombstoned_at IS NULL THEN null
                      ELSE [c.tombstoned_at.epochSeconds, c.tombstoned_at.nanosecond] END,
  lease_until: CASE WHEN c.lease_until IS NULL THEN null ELSE [c.lease_until.epochSeconds, c.lease_until.nanosecond] END
} AS props
