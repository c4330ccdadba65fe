// Import, pass 2: whether a stored capsule has a seq, or a BLOCKS order position, between the
// smallest and the largest seq of the file. When none has, no capsule of the file is stored and
// no ord the file gives its tasks is held, so pass 2 needs no look-up per chunk. Both ranges are
// index seeks (capsule_seq, capsule_ord); the id counter was raised first, so no ingest takes a
// seq in the range afterwards.
RETURN EXISTS {
         MATCH (c:Capsule)
         USING INDEX c:Capsule(seq)
         WHERE c.seq >= $arg.low AND c.seq <= $arg.high
       }
       OR EXISTS {
         MATCH (c:Capsule)
         USING INDEX c:Capsule(ord)
         WHERE c.ord >= $arg.low AND c.ord <= $arg.high
       } AS taken
