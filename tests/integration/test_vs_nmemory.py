"""bench.vs_nmemory loads the same store into graphsvc and nmemory: each pack's totals are the dataset's.

The totals are recomputed from the dataset by SPEC §3/§4's rules (every task is open, no capsule
is archived or tombstoned): constraints and decisions that are not expired (decisions also not
superseded), every failure pattern, and the tasks no BLOCKS edge points into. The nmemory half
needs its binary (bench.vs_nmemory.DEFAULT_NMEMORY, or NMEMORY_BIN) and is skipped without it.
"""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path
from typing import Any

import pytest

from bench.vs_nmemory import DEFAULT_NMEMORY, Item, build, load_graphsvc, load_nmemory, nmemory_server, shapes, totals
from graphsvc.clock import system_clock
from graphsvc.service import GraphService

SIZE = 500


def expected(items: list[Item], project_id: str | None) -> dict[str, int]:
    scope = [item for item in items if project_id is None or item.project_id == project_id]
    superseded = {items[index].content for item in items if item.supersedes is not None
                  for index in [item.supersedes]}
    return {
        "constraints_total": sum(item.kind == "constraint" and not item.expired for item in scope),
        "ready_total": sum(item.kind == "task" and not item.blocked_by for item in scope),
        "decisions_total": sum(item.kind == "decision" and not item.expired and item.content not in superseded
                               for item in scope),
        "traps_total": sum(item.kind == "failure_pattern" for item in scope),
    }


def expectations(items: list[Item]) -> dict[str, dict[str, int]]:
    return {name: expected(items, body.get("project_id")) for name, body in shapes(items).items()}


def test_the_graphsvc_store_holds_the_dataset(db):
    items = build(SIZE)
    service = GraphService(db, clock=system_clock)
    load_graphsvc(service, items)
    found = {name: totals(service.bootstrap(body)) for name, body in shapes(items).items()}
    assert found == expectations(items)
    assert all(value > 0 for counts in found.values() for value in counts.values())


@pytest.mark.skipif(not Path(DEFAULT_NMEMORY).exists(), reason=f"no nmemory binary at {DEFAULT_NMEMORY}")
def test_the_nmemory_store_holds_the_same_dataset(tmp_path):
    from mcp import ClientSession
    from mcp.client.stdio import stdio_client

    items = build(SIZE)

    async def packs() -> dict[str, Any]:
        with open(tmp_path / "nmemory.stderr", "w") as log:
            async with stdio_client(nmemory_server(DEFAULT_NMEMORY, tmp_path), errlog=log) as (read, write), \
                    ClientSession(read, write) as session:
                await session.initialize()
                await load_nmemory(session, items)
                return {name: totals(json.loads((await session.call_tool("memory_bootstrap", body)).content[0].text))
                        for name, body in shapes(items).items()}

    assert asyncio.run(asyncio.wait_for(packs(), timeout=120)) == expectations(items)
