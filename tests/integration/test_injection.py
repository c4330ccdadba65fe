"""Text that looks like Cypher is data, never code (SPEC §4: "Stored text is returned as data").

Every value reaches Neo4j as a parameter, so strings built to break out of a quoted literal,
a parameter reference, a backtick-quoted name or a whole statement must come back byte for
byte, and the store must hold exactly the capsules written: no node or edge appears or vanishes.
"""

from __future__ import annotations

import json
from datetime import datetime, timezone

import pytest

from graphsvc.clock import fixed_clock
from graphsvc.errors import ServiceError
from graphsvc.service import GraphService

NOW = datetime(2026, 12, 1, 12, 0, tzinfo=timezone.utc)

HOSTILE = [
    "'}) DETACH DELETE n //",
    '"}) DETACH DELETE n //',
    "$x",
    "$project_id",
    "`Capsule` `id`",
    "MATCH (n) DELETE n",
    "MATCH (n) DETACH DELETE n; CREATE (:Owned {by: 'me'}) //",
    "') MERGE (x:Capsule {id: 'cap-1'}) SET x.content = 'pwned' //",
    "CALL dbms.shutdown()",
    "{id: 'cap-999'}",
    ":param project_prefix => 'x'",
    "\\' OR 1=1 --",
    "/* */ RETURN 1 // \u2028 \u0000 end",
]


def counts(db) -> tuple[int, int]:
    """Capsules and relationships (the service's own bookkeeping nodes, e.g. tallies, aside)."""
    record = db._driver.execute_query(
        "MATCH (n:Capsule) WITH count(n) AS nodes OPTIONAL MATCH ()-[r]->() RETURN nodes, count(r) AS rels"
    ).records[0]
    return record["nodes"], record["rels"]


@pytest.fixture
def service(db) -> GraphService:
    return GraphService(db, clock=fixed_clock(NOW))


def test_hostile_content_headlines_and_projects_round_trip_as_data(db, service):
    [anchor] = service.ingest({"project_id": "inj", "kind": "task", "content": "A plain anchor task"})["ids"]
    before = counts(db)
    items = []
    for index, text in enumerate(HOSTILE):
        items.append({"project_id": "inj", "kind": "constraint", "content": f"{text}\nsecond line {text}",
                      "headline": text[:120] if text.strip() else None})
        items.append({"project_id": f"inj/{text.replace('/', '|').strip()[:150]}", "kind": "task",
                      "content": text, "blocked_by": [anchor]})
    for item in items:
        if item.get("headline") is None:
            item.pop("headline", None)
    ids = service.ingest({"items": items})["ids"]

    # exactly the capsules written (+ one BLOCKS edge per task), nothing else appeared or vanished
    assert counts(db) == (before[0] + len(items), before[1] + len(HOSTILE))

    got = service.get(ids)["capsules"]
    for item, capsule in zip(items, got):
        assert capsule["content"] == item["content"]
        assert capsule["project_id"] == item["project_id"]
        if "headline" in item:
            assert capsule["headline"] == item["headline"]
    assert service.get([anchor])["capsules"][0]["content"] == "A plain anchor task"

    # reads with hostile terms and fences: data in, data out, store unchanged
    pack = service.bootstrap({"project_prefix": "inj", "terms": HOSTILE, "token_budget": 100_000})
    shown = json.dumps(pack)
    assert pack["constraints_total"] == len(HOSTILE)
    for text in HOSTILE:
        assert json.dumps(text)[1:-1] in shown
    for text in HOSTILE:
        fenced = f"inj/{text.replace('/', '|').strip()[:150]}"
        listed = service.list({"project_id": fenced})
        assert [c["content"] for c in listed["capsules"]] == [text]
    assert counts(db) == (before[0] + len(items), before[1] + len(HOSTILE))


def test_hostile_ids_and_cursors_are_rejected_without_touching_the_store(db, service):
    service.ingest({"project_id": "inj", "kind": "constraint", "content": "Keep me"})
    assert service.bootstrap({})["constraints_total"] == 1  # so a widened fence would show it
    before = counts(db)
    for bad in ["cap-1' OR '1'='1", "cap-1}) DETACH DELETE n //", "$x", "`cap-1`", "cap-1 MATCH (n) DELETE n"]:
        with pytest.raises(ServiceError) as caught:
            service.get([bad])
        assert caught.value.status in (400, 404, 422)
        with pytest.raises(ServiceError) as caught:
            service.ingest({"project_id": "inj", "kind": "fact", "content": "x", "supersedes": [bad]})
        assert caught.value.status == 422
        with pytest.raises(ServiceError) as caught:
            service.list({"cursor": bad})
        assert caught.value.status == 400
    with pytest.raises(ServiceError) as caught:
        service.bootstrap({"project_prefix": "x' OR 1=1 //", "terms": ["$x"]})
    assert caught.value.status == 400  # ends in '/': a prefix that matches nothing
    widened = service.bootstrap({"project_prefix": "x') OR true OR ('", "project_id": "' OR ''='"})
    assert "handles" not in widened  # the fence stayed a fence: nothing matched
    assert counts(db) == before
    assert [c["content"] for c in service.list({})["capsules"]] == ["Keep me"]
