"""memory_bootstrap scope fences (SPEC §2) and input rules (SPEC §4) on a real Neo4j.

Seed: "nott" covers "nott" and "nott/x", never "nottx"; project_id AND project_prefix compose;
an empty or "/"-terminated prefix is rejected with a teaching error rather than answering empty.
"""

from __future__ import annotations

import pytest

from graphsvc.clock import fixed_clock
from graphsvc.errors import BadRequest
from graphsvc.surfaces.http.app import create_app
from graphsvc.service import GraphService

from .bootstrap_support import NOW, Store, ids, ready_ids, surfaced
from .live_server import started_client

PROJECTS = ["nott", "nott/x", "nott/x/deep", "nottx", "other"]


@pytest.fixture
def store(db):
    """One constraint, decision, trap and ready task in every project."""
    s = Store(db)
    for project in PROJECTS:
        for kind in ("constraint", "decision", "failure_pattern", "task"):
            s.put(kind, f"{kind} of {project}", project_id=project)
    return s


def projects_in(pack) -> set[str]:
    rows = pack.get("constraints", []) + pack.get("decisions", []) + pack.get("traps", [])
    ready = pack["ready"]
    rows += ([ready["next_action"]] if "next_action" in ready else []) + ready.get("ready", [])
    return {row["project_id"] for row in rows}


def test_prefix_covers_the_subtree_and_never_a_sibling_that_shares_letters(store):
    pack = store.pack(project_prefix="nott")
    assert projects_in(pack) == {"nott", "nott/x", "nott/x/deep"}
    assert (pack["constraints_total"], pack["decisions_total"], pack["traps_total"], pack["ready_total"]) == (3, 3, 3, 3)
    assert pack["scope"] == {"project_prefix": "nott"}


def test_prefix_nottx_is_only_nottx(store):
    pack = store.pack(project_prefix="nottx")
    assert projects_in(pack) == {"nottx"}


def test_prefix_of_a_sub_project(store):
    assert projects_in(store.pack(project_prefix="nott/x")) == {"nott/x", "nott/x/deep"}


def test_project_id_is_exact(store):
    pack = store.pack(project_id="nott")
    assert projects_in(pack) == {"nott"}
    assert (pack["constraints_total"], pack["decisions_total"], pack["traps_total"], pack["ready_total"]) == (1, 1, 1, 1)


def test_project_id_and_prefix_compose_with_and(store):
    assert projects_in(store.pack(project_id="nott/x", project_prefix="nott")) == {"nott/x"}
    empty = store.pack(project_id="nottx", project_prefix="nott")
    assert surfaced(empty) == set()
    assert empty["ready"]["state"] == "nothing_ready"
    assert (empty["constraints_total"], empty["decisions_total"], empty["traps_total"], empty["ready_total"]) == (0, 0, 0, 0)


def test_no_fence_reads_the_whole_store(store):
    pack = store.pack()
    assert projects_in(pack) == set(PROJECTS)
    assert pack["constraints_total"] == len(PROJECTS)
    assert "scope" not in pack  # no fence: the whole store (an empty object would only cost tokens)


def test_a_blocker_outside_the_fence_still_blocks(db):
    s = Store(db)
    outside = s.put("task", "outside blocker", project_id="nottx")
    inside = s.put("task", "inside", project_id="nott", blocked_by=[outside])
    free = s.put("task", "free", project_id="nott")
    pack = s.pack(project_prefix="nott")
    assert ready_ids(pack) == [free]
    s.done(outside)
    assert set(ready_ids(s.pack(project_prefix="nott"))) == {inside, free}


def test_a_cycle_outside_the_fence_does_not_close_the_fence(db):
    s = Store(db)
    a = s.put("task", "a", project_id="nottx")
    b = s.put("task", "b", project_id="nottx", blocked_by=[a])
    s.block(b, a)
    mine = s.put("task", "mine", project_id="nott")
    assert s.pack(project_prefix="nottx")["ready"]["cycle"] == [a, b]
    pack = s.pack(project_prefix="nott")
    assert pack["ready"]["next_action"]["id"] == mine


def test_a_cycle_half_inside_the_fence_is_not_a_fenced_cycle(db):
    """The fenced live subgraph has no cycle when one of the cycle's nodes is outside it."""
    s = Store(db)
    a = s.put("task", "a", project_id="nott")
    b = s.put("task", "b", project_id="nottx", blocked_by=[a])
    s.block(b, a)
    pack = s.pack(project_prefix="nott")
    assert "cycle" not in pack["ready"]
    assert pack["ready"]["state"] == "nothing_ready"  # a is still blocked by the open b


# ------------------------------------------------------------------ input rules over HTTP


@pytest.fixture
def client(db):
    with started_client(create_app(GraphService(db, clock=fixed_clock(NOW)))) as c:
        yield c


@pytest.mark.parametrize("prefix", ["", "   ", "nott/", "/"])
def test_a_prefix_that_can_match_nothing_is_a_teaching_400(client, prefix):
    response = client.post("/v1/memory_bootstrap", json={"project_prefix": prefix})
    assert response.status_code == 400
    error = response.json()["error"]
    assert error["field"] == "project_prefix"
    assert "matches nothing" in error["message"]


@pytest.mark.parametrize(
    ("body", "field", "words"),
    [
        ({"token_budget": -1}, "token_budget", "greater than or equal to 0"),
        ({"token_budget": 1.5}, "token_budget", "integer"),
        ({"token_budget": "100"}, "token_budget", "integer"),
        ({"token_budget": True}, "token_budget", "integer"),
        ({"terms": "parser"}, "terms", "list"),
        ({"terms": ["ok", 3]}, "terms[1]", "string"),
        ({"terms": ["t"] * 65}, "terms", "at most 64"),
        ({"terms": ["ok", "x" * 201]}, "terms[1]", "at most 200"),
        ({"intent": "fix the bug"}, "intent", "accepted: agent, project_id, project_prefix, terms, token_budget"),
        ({"project_id": "nott/"}, "project_id", "'/'"),
    ],
)
def test_bad_input_is_400_naming_the_field(client, body, field, words):
    response = client.post("/v1/memory_bootstrap", json=body)
    assert response.status_code == 400, response.text
    error = response.json()["error"]
    assert error["code"] == "bad_request"
    assert error["field"] == field
    assert words in error["message"]


def test_limits_themselves_are_accepted(client):
    body = {"terms": ["t"] * 64, "token_budget": 0}
    assert client.post("/v1/memory_bootstrap", json=body).status_code == 200
    assert client.post("/v1/memory_bootstrap", json={"terms": ["x" * 200]}).status_code == 200


def test_a_term_without_alphanumerics_is_not_an_error(client):
    response = client.post("/v1/memory_bootstrap", json={"terms": ["--", "   ", "!!"]})
    assert response.status_code == 200
    assert response.json()["ready"]["state"] == "nothing_ready"


def test_not_a_json_object_is_400(client):
    assert client.post("/v1/memory_bootstrap", json=["nott"]).status_code == 400
    assert client.post("/v1/memory_bootstrap", content=b"{nope").status_code == 400


def test_an_empty_body_means_the_whole_store_without_terms(client, db):
    Store(db).put("constraint", "c", project_id="anything")
    response = client.post("/v1/memory_bootstrap", content=b"")
    assert response.status_code == 200
    assert ids(response.json()["constraints"]) == ["cap-1"]


def test_the_service_raises_bad_request_for_the_other_surfaces(db):
    with pytest.raises(BadRequest) as caught:
        GraphService(db, clock=fixed_clock(NOW)).bootstrap({"project_prefix": "nott/"})
    assert caught.value.field == "project_prefix"
