// Record migration progress or its end: $arg.changes holds version / migrating_to / pages_after / order_done
// (a null removes the field). Resumable: a crashed migration starts again from pages_after.
MERGE (v:SchemaVersion {name: 'graphsvc'})
SET v += $arg.changes
