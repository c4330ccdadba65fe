"""bench.vs_nmemory_retrieve's agreement part at a small size: graphsvc and nmemory, loaded with the
same capsules, answer memory_retrieve alike in every query class except the differences
docs/recall.md documents as choices, and those differ exactly as documented. Needs the nmemory binary
(bench.vs_nmemory.DEFAULT_NMEMORY, or NMEMORY_BIN); skipped without it."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from bench.vs_nmemory import DEFAULT_NMEMORY, nmemory_server
from bench.vs_nmemory_retrieve import CLASSES, agreement, load_graphsvc_plan, load_nmemory_plan, plan, tabulate
from graphsvc.clock import system_clock
from graphsvc.service import GraphService

#: The documented differences (docs/recall.md): the variant, then what each product answers.
DOCUMENTED = {
    # Unicode case folding: "STRASSE" is "straße" for graphsvc, two words for nmemory's unicode61.
    "folded (straße)": ("grounded", "abstain"),
    # SPEC §4/§8: a term without a letter or digit matches nothing, never an error.
    "only terms without letters": ("abstain", "error"),
    # SPEC §1: only a capsule that is not tombstoned supersedes.
    "its superseder tombstoned": ("grounded", "missing_evidence"),
}


@pytest.mark.skipif(not Path(DEFAULT_NMEMORY).exists(), reason=f"no nmemory binary at {DEFAULT_NMEMORY}")
def test_both_answer_alike_but_for_the_documented_choices(db, tmp_path):
    from mcp import ClientSession
    from mcp.client.stdio import stdio_client

    planned = plan(400, 14)
    service = GraphService(db, clock=system_clock)
    with db.longer_timeout():
        load_graphsvc_plan(service, planned)

    async def rows():
        with open(tmp_path / "nmemory.stderr", "w") as log:
            async with stdio_client(nmemory_server(DEFAULT_NMEMORY, tmp_path), errlog=log) as (read, write), \
                    ClientSession(read, write) as session:
                await session.initialize()
                await load_nmemory_plan(session, planned)
                return await agreement(session, service, planned)

    found = asyncio.run(asyncio.wait_for(rows(), timeout=300))
    outcomes = {row["graphsvc"]["outcome"] for row in found}
    assert {"grounded", "missing_evidence", "abstain"} <= outcomes  # the classes reach every outcome
    assert any(row["graphsvc"]["excluded"] for row in found if row["graphsvc"]["outcome"] == "grounded")
    for row in found:
        agreed = row["outcome"] and row["ids"] and row["excluded"]
        if row["variant"] in DOCUMENTED:
            assert (row["graphsvc"]["outcome"], row["nmemory"]["outcome"]) == DOCUMENTED[row["variant"]], row
        else:
            assert agreed, row
    assert set(DOCUMENTED) <= {row["variant"] for row in found}
    table = tabulate(found)
    assert [table[cls]["queries"] for cls in CLASSES] == [14] * len(CLASSES)
