// The store's schema version (graphsvc.store.migrate): one node, absent on a store written before v2.
OPTIONAL MATCH (v:SchemaVersion {name: 'graphsvc'})
RETURN v.version AS version, v.migrating_to AS migrating_to, v.order_done AS order_done,
       v.pages_after AS pages_after
