"""get and list against a real Neo4j: flags, edges, 404s, fences, filters, stable pagination."""

from __future__ import annotations

import json
from datetime import datetime, timezone

import pytest

from graphsvc.clock import fixed_clock
from graphsvc.errors import BadRequest, InvalidInput, NotFound
from graphsvc.service import GraphService
from graphsvc.store.reads import encode_cursor

NOW = datetime(2026, 12, 1, 12, 0, tzinfo=timezone.utc)


@pytest.fixture
def svc(db):
    return GraphService(db, clock=fixed_clock(NOW))


def ids(page: dict) -> list[str]:
    return [capsule["id"] for capsule in page["capsules"]]


def fact(project: str, content: str = "x", **extra) -> dict:
    return {"project_id": project, "kind": "fact", "content": content, **extra}


# ---------------------------------------------------------------- get


def test_get_returns_full_capsules_with_edges_and_flags_in_request_order(svc):
    svc.ingest({"project_id": "nott", "kind": "task", "content": "t1"})                  # cap-1
    svc.ingest({"project_id": "nott", "kind": "task", "content": "t2", "blocked_by": ["cap-1"]})  # cap-2
    svc.ingest(fact("nott", "old", valid_to="2026-12-01T12:00:00Z"))                   # cap-3, expired (== now)
    svc.ingest({"items": [fact("nott", "new", supersedes=["cap-3"]),                   # cap-4
                          fact("nott", "future", valid_to="2026-12-01T12:00:00.001Z")]})  # cap-5
    got = {c["id"]: c for c in svc.get(["cap-3", "cap-2", "cap-5", "cap-1", "cap-4", "cap-2"])["capsules"]}
    assert list(got) == ["cap-3", "cap-2", "cap-5", "cap-1", "cap-4"]
    assert got["cap-1"]["edges"] == {"out": [{"type": "BLOCKS", "to": "cap-2"}], "in": []}
    assert got["cap-2"]["edges"] == {"out": [], "in": [{"type": "BLOCKS", "from": "cap-1"}]}
    assert got["cap-3"]["edges"] == {"out": [], "in": [{"type": "SUPERSEDES", "from": "cap-4"}]}
    assert (got["cap-3"]["superseded"], got["cap-3"]["expired"], got["cap-3"]["tombstoned"]) == (True, True, False)
    assert (got["cap-5"]["superseded"], got["cap-5"]["expired"]) == (False, False)
    assert got["cap-1"] == {
        "id": "cap-1", "project_id": "nott", "kind": "task", "tier": "active", "headline": "t1", "content": "t1",
        "status": "open", "created_at": "2026-12-01T12:00:00.000Z", "updated_at": "2026-12-01T12:00:00.000Z",
        "tombstoned": False, "superseded": False, "expired": False,
        "edges": {"out": [{"type": "BLOCKS", "to": "cap-2"}], "in": []},
    }
    assert "status" not in got["cap-3"]


def test_get_shows_tombstoned_and_a_tombstoned_superseder_does_not_supersede(svc):
    svc.ingest(fact("nott", "old"))
    svc.ingest(fact("nott", "new", supersedes=["cap-1"]))
    svc.tombstone(["cap-2"])
    old, new = svc.get(["cap-1", "cap-2"])["capsules"]
    assert old["superseded"] is False
    assert new["tombstoned"] is True and new["tombstoned_at"] == "2026-12-01T12:00:00.000Z"


def test_get_unknown_id_is_404_naming_it(svc):
    svc.ingest(fact("nott"))
    with pytest.raises(NotFound) as caught:
        svc.get(["cap-1", "cap-9"])
    assert caught.value.field == "ids[1]" and "cap-9" in caught.value.message


def test_get_malformed_id_is_422(svc):
    with pytest.raises(InvalidInput) as caught:
        svc.get(["cap-1", "CAP-2"])
    assert caught.value.field == "ids[1]"


# ---------------------------------------------------------------- list


@pytest.fixture
def fenced(svc):
    svc.ingest({"items": [
        fact("nott"),                                                   # cap-1
        fact("nott/x"),                                                 # cap-2
        fact("nottx"),                                                  # cap-3
        fact("nott/x/y"),                                               # cap-4
        fact("other"),                                                  # cap-5
        {"project_id": "nott", "kind": "task", "content": "t"},         # cap-6
        {"project_id": "nott", "kind": "task", "content": "d", "tier": "stale"},  # cap-7
        fact("nott", tier="archived"),                                  # cap-8
    ]})
    svc.update("cap-7", {"status": "done"})
    return svc


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ({}, ["cap-1", "cap-2", "cap-3", "cap-4", "cap-5", "cap-6", "cap-7", "cap-8"]),
        ({"project_prefix": "nott"}, ["cap-1", "cap-2", "cap-4", "cap-6", "cap-7", "cap-8"]),
        ({"project_prefix": "nottx"}, ["cap-3"]),
        ({"project_prefix": "nott/x"}, ["cap-2", "cap-4"]),
        ({"project_prefix": "not"}, []),
        ({"project_id": "nott"}, ["cap-1", "cap-6", "cap-7", "cap-8"]),
        ({"project_id": "nott/x", "project_prefix": "nott"}, ["cap-2"]),
        ({"project_id": "nottx", "project_prefix": "nott"}, []),
        ({"kind": "task"}, ["cap-6", "cap-7"]),
        ({"status": "done"}, ["cap-7"]),
        ({"tier": "archived"}, ["cap-8"]),
        ({"project_prefix": "nott", "kind": "fact", "tier": "active"}, ["cap-1", "cap-2", "cap-4"]),
    ],
)
def test_list_fences_and_filters(fenced, query, expected):
    assert ids(fenced.list(query)) == expected


def test_list_never_shows_tombstoned_but_get_and_export_do(fenced):
    fenced.tombstone(["cap-2"])
    assert ids(fenced.list({"project_prefix": "nott/x"})) == ["cap-4"]
    assert "cap-2" not in ids(fenced.list({"limit": 500}))
    with pytest.raises(BadRequest) as refused:  # list has no opt-in for tombstoned capsules: SPEC §1 shows them through memory_get only
        fenced.list({"project_prefix": "nott/x", "include_tombstoned": True})
    assert refused.value.field == "include_tombstoned"
    assert fenced.get(["cap-2"])["capsules"][0]["tombstoned"] is True
    exported = [json.loads(line) for line in fenced.export_lines()]
    assert any(row.get("capsule", {}).get("id") == "cap-2" and row["capsule"]["tombstoned_at"] for row in exported)


@pytest.mark.parametrize(
    ("query", "field", "rule"),
    [
        ({"project_prefix": ""}, "project_prefix", "matches nothing"),
        ({"project_prefix": "nott/"}, "project_prefix", "ending in '/'"),
        ({"limit": 0}, "limit", "greater than or equal to 1"),
        ({"limit": 501}, "limit", "less than or equal to 500"),
        ({"kind": "note"}, "kind", "Input should be"),
        ({"cursor": "not-a-cursor!"}, "cursor", "not one this service issued"),
        ({"cursor": "c2VxOi0x"}, "cursor", "not one this service issued"),  # "seq:-1"
        ({"sort": "id"}, "sort", "accepted:"),
    ],
)
def test_list_bad_requests_are_400(fenced, query, field, rule):
    with pytest.raises(BadRequest) as caught:
        fenced.list(query)
    assert caught.value.status == 400 and caught.value.field == field
    assert rule in caught.value.message


def test_pagination_walks_everything_once_and_is_stable_under_writes(svc):
    svc.ingest({"items": [fact("nott" if n % 3 else "nottx", f"c{n}") for n in range(1, 31)]})
    expected = [f"cap-{n}" for n in range(1, 31) if n % 3]
    seen: list[str] = []
    page = svc.list({"project_prefix": "nott", "limit": 7})
    first_cursor = page["next_cursor"]
    while True:
        seen += ids(page)
        if len(seen) == 7:  # between pages: new capsules and a tombstone of an already-seen one
            svc.ingest({"items": [fact("nott", "late")]})
            svc.tombstone(["cap-1"])
        if page["next_cursor"] is None:
            break
        page = svc.list({"project_prefix": "nott", "limit": 7, "cursor": page["next_cursor"]})
    assert seen == expected + ["cap-31"]
    # the same cursor always answers the same page
    again = svc.list({"project_prefix": "nott", "limit": 7, "cursor": first_cursor})
    assert ids(again) == expected[7:14]
    assert first_cursor == encode_cursor(int(expected[6][4:]))


def test_last_page_has_no_cursor(fenced):
    page = fenced.list({"project_id": "nott", "limit": 4})
    assert len(page["capsules"]) == 4 and page["next_cursor"] is None
    assert fenced.list({"limit": 500})["next_cursor"] is None
