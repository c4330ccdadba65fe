"""bench.vs_nmemory_retrieve's plan: deterministic, and each query class holds what its name says,
checked against the planted dataset by plain reading (which capsules hold a query's words, and what
state they are in)."""

from __future__ import annotations

import json
from datetime import datetime, timezone

from bench.vs_nmemory import FENCED, edges
from bench.vs_nmemory_retrieve import CLASSES, LIMIT, import_file, plan
from graphsvc.core.retrieve import alias_key
from graphsvc.core.textmatch import tokenize

SIZE, PER_CLASS = 1000, 30
PLAN = plan(SIZE, PER_CLASS)


def holders(words: set[str]) -> set[int]:
    """The items whose text holds every one of these folded words."""
    return {index for index, item in enumerate(PLAN.items) if words <= set(tokenize(item.content))}


def superseded() -> set[int]:
    tombstoned = set(PLAN.tombstoned)
    return {b for kind, a, b in edges(PLAN.items) if kind == "SUPERSEDES" and a not in tombstoned}


def test_the_plan_is_the_same_for_the_same_arguments():
    again = plan(SIZE, PER_CLASS)
    assert [item.content for item in again.items] == [item.content for item in PLAN.items]
    assert [q.body for q in again.queries] == [q.body for q in PLAN.queries]
    assert again.aliases == PLAN.aliases and again.tombstoned == PLAN.tombstoned


def test_every_class_has_its_queries_and_every_query_reads_all_it_matches():
    assert [sum(q.cls == cls for q in PLAN.queries) for cls in CLASSES] == [PER_CLASS] * len(CLASSES)
    assert all(q.body["limit"] == LIMIT for q in PLAN.queries)
    assert len({item.content for item in PLAN.items}) == SIZE  # nmemory would merge equal contents


def test_matched_queries_find_live_capsules():
    dead = superseded() | set(PLAN.tombstoned) | {i for i, item in enumerate(PLAN.items) if item.expired}
    for query in (q for q in PLAN.queries if q.cls == "matched"):
        found = holders(set(tokenize(query.body["terms"][0])))
        fence = query.body.get("project_id") or query.body.get("project_prefix")
        if fence:
            found = {i for i in found if PLAN.items[i].project_id == fence
                     or ("project_prefix" in query.body and PLAN.items[i].project_id.startswith(fence + "/"))}
        assert found - dead and len(found) <= LIMIT, query


def test_the_excluding_classes_match_only_excluded_capsules():
    expired = {i for i, item in enumerate(PLAN.items) if item.expired}
    for query in PLAN.queries:
        found = holders(set(tokenize(query.body["terms"][0])))
        if query.cls == "superseded-only" and query.variant == "superseded matches":
            assert found and found <= superseded(), query
        elif query.cls == "superseded-only":  # its only superseder is tombstoned: live again for graphsvc
            assert found and not found & superseded(), query
        elif query.cls == "expired-only":
            assert found and found <= expired, query
        elif query.cls == "nothing" and query.variant != "planted outside the fence":
            words = [set(tokenize(term)) for term in query.body["terms"]]
            assert not any(holders(term) for term in words if term), query


def test_tombstoned_id_queries_name_tombstoned_capsules_and_alias_terms_are_taught():
    for query in (q for q in PLAN.queries if q.cls == "tombstoned-id" and q.variant != "its content"):
        assert int(query.body["terms"][0][4:]) - 1 in PLAN.tombstoned
    taught = {alias_key(term) for pair in PLAN.aliases for term in pair}
    for query in (q for q in PLAN.queries if q.cls == "alias-matched"):
        assert alias_key(query.body["terms"][0]) in taught
        assert not holders(set(tokenize(query.body["terms"][0]))) or query.variant == "alias -> term"


def test_the_import_file_holds_the_plan_in_export_format():
    lines = [json.loads(line) for line in import_file(PLAN, datetime(2026, 12, 1, 12, tzinfo=timezone.utc))]
    capsules = [line["capsule"] for line in lines if "capsule" in line]
    assert [c["id"] for c in capsules] == [f"cap-{n}" for n in range(1, SIZE + 1)]
    assert sum("tombstoned_at" in c for c in capsules) == len(PLAN.tombstoned)
    assert sum("valid_to" in c for c in capsules) == sum(item.expired for item in PLAN.items)
    assert sum("edge" in line for line in lines) == len(edges(PLAN.items))
    assert sum(len(line["alias"]["aliases"]) for line in lines if "alias" in line) == len(PLAN.aliases)
    assert all(c["content"].startswith(c["headline"]) for c in capsules)
    assert FENCED in {c["project_id"] for c in capsules}
