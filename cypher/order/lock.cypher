// graphsvc.store.blocks_order: serialise every transaction that inserts BLOCKS edges. Pearce–Kelly
// reorders read a region of the graph and rewrite its `ord`s; two inserting transactions that did
// not see each other's edges could otherwise both leave an unmarked edge against the order.
// Taken first (before any other write of the transaction), so lock order is always the same.
MERGE (l:GraphsvcLock {name: 'blocks_order'})
SET l.taken = coalesce(l.taken, 0) + 1
