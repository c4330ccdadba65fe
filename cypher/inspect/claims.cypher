// Claims (SPEC §12): who holds which task or epic, until when (Neo4j Browser).
//
//   :param project_prefix => 'shop'      (null = the whole store)
//
// Every node carrying a lease, live ones first, each by the end of its lease. `live` compares
// lease_until with the database clock: an expired lease is as if absent (the node is claimable
// again and packs show it as plain ready work) until a claim replaces it. `key`: the API key that
// took the claim, when one did. Found through the lease_until index, so only leased nodes are read.
MATCH (c:Capsule)
WHERE c.lease_until IS NOT NULL
  AND ($project_prefix IS NULL OR c.project_id = $project_prefix OR c.project_id STARTS WITH $project_prefix + '/')
WITH c, c.lease_until > datetime() AS live
RETURN c.lease_agent AS holder, c.id AS id, c.headline AS headline, c.project_id AS project_id,
       c.lease_until AS lease_until, live, c.lease_key AS key, c.ready = true AS ready, c
ORDER BY live DESC, lease_until ASC, c.seq ASC
