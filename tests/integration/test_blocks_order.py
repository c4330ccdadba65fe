"""Bulk BLOCKS insertion against the order (the interval reorder of graphsvc.store.blocks_order).

A relate batch with more than BATCH_REORDER_THRESHOLD edges against the order orders the ord
intervals they span again from scratch. Random batches, cycles included: afterwards the order's
invariant holds (verify), and the pack equals the v1 read's, cycle and all.
"""

from __future__ import annotations

import random

import pytest

from graphsvc.clock import fixed_clock
from graphsvc.service import GraphService
from graphsvc.store.blocks_order import BATCH_REORDER_THRESHOLD

from .bootstrap_support import NOW
from .oracle import assert_maintained, oracle_pack


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_a_bulk_relate_against_the_order_keeps_the_invariant_and_the_pack(db, seed):
    rng = random.Random(seed)
    service = GraphService(db, clock=fixed_clock(NOW))
    ids = service.ingest({"items": [{"project_id": rng.choice(["p", "p/x", "q"]), "kind": "task",
                                     "content": f"task {n}"} for n in range(60)]})["ids"]
    for _ in range(3):
        edges = {(a, b) for a, b in ((rng.randrange(60), rng.randrange(60)) for _ in range(70)) if a != b}
        against = [(a, b) for a, b in edges if a > b]
        assert len(against) > BATCH_REORDER_THRESHOLD  # the bulk path, not one insertion per edge
        service.relate({"add": [{"type": "BLOCKS", "from": ids[a], "to": ids[b]} for a, b in sorted(edges)]})
        assert_maintained(db)
        for request in ({}, {"project_prefix": "p"}, {"project_id": "q"}):
            assert service.bootstrap(request) == oracle_pack(db, request, NOW)
