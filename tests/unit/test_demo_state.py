"""What `graphsvc demo` decides from the `shop` subtree's live capsules (graphsvc.surfaces.commands.demo)."""

from __future__ import annotations

from typing import Any

from graphsvc.demo_data import CAPSULES, ingest_waves
from graphsvc.surfaces.commands.demo import demo_state


class PagedList:
    """A list endpoint that answers two capsules a page, whatever limit is asked, with a cursor."""

    def __init__(self, capsules: list[dict[str, Any]]):
        self.capsules = capsules
        self.requests: list[dict[str, Any]] = []

    def list(self, data: dict[str, Any]) -> dict[str, Any]:
        self.requests.append(data)
        start = int(data.get("cursor", "0"))
        page = self.capsules[start:start + 2]
        more = start + 2 < len(self.capsules)
        return {"capsules": page, "next_cursor": str(start + 2) if more else None}


def stored(capsule, number: int) -> dict[str, Any]:
    return {"id": f"cap-{number}", "project_id": capsule.project_id, "kind": capsule.kind,
            "content": capsule.content}


def test_every_page_is_read_and_the_sample_told_from_other_capsules():
    first_waves = [capsule for wave in ingest_waves(CAPSULES)[:2] for capsule in wave]
    rows = [stored(capsule, n) for n, capsule in enumerate(first_waves, start=1)]
    rows.insert(3, {"id": "cap-99", "project_id": "shop/api", "kind": "fact", "content": "ours"})
    target = PagedList(rows)

    state = demo_state(target)

    assert state.sample == {capsule.key for capsule in first_waves} and state.others == 1
    assert not state.loaded and not state.empty
    assert len(target.requests) == (len(rows) + 1) // 2
    assert all(request["project_prefix"] == "shop" for request in target.requests)


def test_loaded_means_the_last_wave_is_there_and_empty_means_nothing_live():
    everything = PagedList([stored(capsule, n) for n, capsule in enumerate(CAPSULES, start=1)])
    assert demo_state(everything).loaded
    assert demo_state(PagedList([])).empty
    but_last = [capsule for capsule in CAPSULES if capsule not in ingest_waves(CAPSULES)[-1]]
    assert not demo_state(PagedList([stored(capsule, n) for n, capsule in enumerate(but_last)])).loaded
