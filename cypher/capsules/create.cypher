// Create the validated capsules of one batch (properties prepared by graphsvc.store.ingest), each
// with its kind label beside :Capsule. The request instant is sent ONCE as $arg.now rather than in
// every row: packing thousands of identical datetimes was most of the client's time in a
// 1000-item batch. `tokens`, `superseded` and (tasks/epics) `ord` arrive in the row; readiness is
// set by maintain/refresh_readiness once the batch's edges exist.
UNWIND $arg.rows AS row
CREATE (c:Capsule)
SET c = row.props, c.created_at = $arg.now, c.updated_at = $arg.now
SET c:$(row.label)
