// bench.plan_time's yardstick: 40 trivial clauses, no index, no procedure, nothing to choose
// between. What Neo4j spends planning it is the fixed cost of a statement's clauses on this
// machine (parsing, the semantic passes, one horizon per WITH), apart from any planning choice:
// `python -m bench.plan_time --statements bench/plan_yardstick bootstrap/sections_store`.
WITH 1 AS x0
WITH x0 + 1 AS x1
WITH x1 + 1 AS x2
WITH x2 + 1 AS x3
WITH x3 + 1 AS x4
WITH x4 + 1 AS x5
WITH x5 + 1 AS x6
WITH x6 + 1 AS x7
WITH x7 + 1 AS x8
WITH x8 + 1 AS x9
WITH x9 + 1 AS x10
WITH x10 + 1 AS x11
WITH x11 + 1 AS x12
WITH x12 + 1 AS x13
WITH x13 + 1 AS x14
WITH x14 + 1 AS x15
WITH x15 + 1 AS x16
WITH x16 + 1 AS x17
WITH x17 + 1 AS x18
WITH x18 + 1 AS x19
WITH x19 + 1 AS x20
WITH x20 + 1 AS x21
WITH x21 + 1 AS x22
WITH x22 + 1 AS x23
WITH x23 + 1 AS x24
WITH x24 + 1 AS x25
WITH x25 + 1 AS x26
WITH x26 + 1 AS x27
WITH x27 + 1 AS x28
WITH x28 + 1 AS x29
WITH x29 + 1 AS x30
WITH x30 + 1 AS x31
WITH x31 + 1 AS x32
WITH x32 + 1 AS x33
WITH x33 + 1 AS x34
WITH x34 + 1 AS x35
WITH x35 + 1 AS x36
WITH x36 + 1 AS x37
WITH x37 + 1 AS x38
WITH x38 + 1 AS x39
WITH x39 + 1 AS x40
RETURN x40 AS x
