// Import: the capsules of this chunk that are already stored, projected exactly as
// transfer/export_capsules projects them (an import compares what export would write).
UNWIND $arg.ids AS wanted
MATCH (c:Capsule {id: wanted})
USING INDEX SEEK c:Capsule(id)
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
