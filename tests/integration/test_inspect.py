"""The ready-to-paste Neo4j Browser queries in `cypher/inspect/` answer correctly on a real Neo4j.

Each query is run exactly as an operator would paste it (the file text, comments included) with
the `$project_prefix` parameter they would set with `:param`. The graph is seeded through
`GraphService.ingest`, the same path the product uses. The inspect queries read `datetime()` for
expiry (an operator has no request clock), so the seed clock is pinned to the real time of the run.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from neo4j import Query

from graphsvc.store import cypher
from graphsvc.clock import fixed_clock, system_clock
from graphsvc.service import GraphService

NOW = system_clock()
PAST = (NOW - timedelta(days=1)).isoformat()
FUTURE = (NOW + timedelta(days=30)).isoformat()


def run_inspect(db, name: str, project_prefix: str | None, timeout: float = 60.0) -> list[Any]:
    """Run `cypher/inspect/<name>.cypher` verbatim; the timeout fails a runaway query instead of hanging."""
    query = Query(cypher.load(f"inspect/{name}"), timeout=timeout)
    return db._driver.execute_query(query, {"project_prefix": project_prefix}, database_=db.database).records


def ingest(service: GraphService, *items: dict[str, Any]) -> list[str]:
    return service.ingest({"items": list(items)})["ids"]


def task(project: str, headline: str, **extra: Any) -> dict[str, Any]:
    return {"project_id": project, "kind": "task", "content": f"{headline}\n\ndetails", **extra}


@pytest.fixture
def service(db) -> GraphService:
    return GraphService(db, clock=fixed_clock(NOW))


@pytest.fixture
def shop(service) -> dict[str, str]:
    """A small store: a fenced project 'shop' (+ 'shop/web'), a look-alike 'shopx', and 'other'.

    Returns name -> capsule id. Edges are created by ingest (`blocks`, `blocked_by`, `supersedes`).
    """
    first = {
        "cart": task("shop", "Design the cart API"),
        "checkout": task("shop", "Ship the checkout page"),
        "header": task("shop/web", "Fix the header", status="done"),
        "analytics": task("shop/web", "Wire analytics"),
        "old_plan": task("shop", "Old plan for search"),
        "expired": task("shop", "Expired spike", valid_to=PAST),
        "far_future": task("shop", "Migrate payments", valid_to=FUTURE),
        "lookalike": task("shopx", "Look-alike project task"),
        "rule": {"project_id": "shop", "kind": "constraint", "content": "Never drop production tables"},
        "old_blocker": task("shop", "Blocker that was replaced"),
        "other_task": task("other", "Unrelated work"),
    }
    cap = dict(zip(first, ingest(service, *first.values())))
    second = {
        "review": task("shop", "Review the cart API", blocked_by=[cap["cart"]], blocks=[cap["checkout"]]),
        "polish": task("shop/web", "Polish analytics", blocked_by=[cap["header"], cap["analytics"]]),
        "deploy": task("shop/web", "Deploy the header", blocked_by=[cap["header"]]),
        "new_plan": task("shop", "New plan for search", supersedes=[cap["old_plan"]]),
        "new_blocker": task("shop", "Replacement blocker", supersedes=[cap["old_blocker"]]),
        "gated": task("shop", "Gated on a replaced blocker", blocked_by=[cap["old_blocker"]]),
        "waits_outside": task("shop", "Wait for the look-alike", blocked_by=[cap["lookalike"]]),
        "notes": task("shop", "Write the release notes"),
    }
    cap.update(zip(second, ingest(service, *second.values())))
    return cap


def by_name(shop: dict[str, str], ids: list[str]) -> list[str]:
    names = {capsule_id: name for name, capsule_id in shop.items()}
    return [names[i] for i in ids]


# ---------------------------------------------------------------- project_graph


def test_project_graph_shows_the_fenced_capsules_and_their_edges(db, shop):
    rows = run_inspect(db, "project_graph", "shop")
    nodes = {row["c"]["id"] for row in rows}
    edges = {(row["c"]["id"], row["r"].type, row["other"]["id"]) for row in rows if row["r"] is not None}
    assert set(by_name(shop, sorted(nodes))) == set(shop) - {"lookalike", "other_task"}
    assert set(by_name(shop, [e[0] for e in edges])) | set(by_name(shop, [e[2] for e in edges])) <= set(shop)
    named = {(by_name(shop, [a])[0], kind, by_name(shop, [b])[0]) for a, kind, b in edges}
    assert named == {
        ("cart", "BLOCKS", "review"),
        ("review", "BLOCKS", "checkout"),
        ("header", "BLOCKS", "polish"),
        ("analytics", "BLOCKS", "polish"),
        ("header", "BLOCKS", "deploy"),
        ("new_plan", "SUPERSEDES", "old_plan"),
        ("new_blocker", "SUPERSEDES", "old_blocker"),
        ("old_blocker", "BLOCKS", "gated"),
        # lookalike -> waits_outside is not drawn: 'shopx' is outside the fence
    }
    headlines = {row["c"]["id"]: row["c"]["headline"] for row in rows}
    assert headlines[shop["checkout"]] == "Ship the checkout page"


def test_project_graph_without_a_fence_shows_the_whole_store(db, shop):
    rows = run_inspect(db, "project_graph", None)
    assert {row["c"]["id"] for row in rows} == set(shop.values())
    edges = {(row["c"]["id"], row["other"]["id"]) for row in rows if row["r"] is not None}
    assert (shop["lookalike"], shop["waits_outside"]) in edges


def test_project_graph_prefix_is_a_subtree_not_a_string_prefix(db, shop):
    assert {row["c"]["id"] for row in run_inspect(db, "project_graph", "shopx")} == {shop["lookalike"]}
    web = {row["c"]["id"] for row in run_inspect(db, "project_graph", "shop/web")}
    assert set(by_name(shop, list(web))) == {"header", "analytics", "polish", "deploy"}


# ---------------------------------------------------------------- ready_set


def test_ready_set_follows_the_spec_rules(db, shop):
    rows = run_inspect(db, "ready_set", "shop")
    # One ingest clock, so every updated_at is equal and the order is the numeric id order.
    assert by_name(shop, [row["id"] for row in rows]) == [
        "cart",          # blocks others, blocked by nothing
        "analytics",     # open, unblocked (it blocks polish)
        "far_future",    # valid_to in the future: not expired
        "deploy",        # its only blocker (header) is done
        "new_plan",      # supersedes old_plan, so old_plan is out
        "new_blocker",
        "gated",         # its only blocker is superseded
        "notes",
    ]
    # Left out, each for its rule: checkout/review/polish (open blocker), header (done),
    # old_plan/old_blocker (superseded), expired, rule (not a task), waits_outside (its blocker
    # lives in 'shopx' but still blocks), lookalike/other_task (outside the fence).
    assert rows[0]["headline"] == "Design the cart API"
    assert rows[0]["capsule"]["id"] == shop["cart"]


def test_tombstones_leave_the_ready_set_and_stop_blocking_or_superseding(db, shop, service):
    service.tombstone([shop["new_plan"], shop["cart"], shop["notes"]])
    rows = run_inspect(db, "ready_set", "shop")
    assert by_name(shop, [row["id"] for row in rows]) == [
        "analytics",
        "old_plan",      # its only superseder is tombstoned: current again
        "far_future",
        "review",        # its only blocker (cart) is tombstoned
        "deploy",
        "new_blocker",
        "gated",
    ]
    chains = {tuple(row["chain"]): row["live"] for row in run_inspect(db, "supersede_chains", "shop")}
    assert chains[(shop["new_plan"], shop["old_plan"])] is False
    assert chains[(shop["new_blocker"], shop["old_blocker"])] is True


def test_ready_set_orders_recently_updated_first(db, shop, service):
    later = GraphService(db, clock=fixed_clock(NOW + timedelta(minutes=5)))
    [fresh] = later.ingest({"items": [task("shop", "Fresh task")]})["ids"]
    ids = [row["id"] for row in run_inspect(db, "ready_set", "shop")]
    assert ids[0] == fresh
    assert ids[1] == shop["cart"]


def test_ready_set_fence_keeps_look_alike_projects_apart(db, shop):
    assert [row["id"] for row in run_inspect(db, "ready_set", "shopx")] == [shop["lookalike"]]
    everything = {row["id"] for row in run_inspect(db, "ready_set", None)}
    assert {shop["lookalike"], shop["other_task"], shop["cart"]} <= everything
    assert shop["waits_outside"] not in everything


# ---------------------------------------------------------------- cycle


def test_no_cycle_gives_no_row(db, shop):
    assert run_inspect(db, "cycle", "shop") == []
    assert run_inspect(db, "cycle", None) == []


def test_cycle_names_one_concrete_cycle_rotated_to_its_smallest_id(db, service, shop):
    # Edges may only point at stored capsules, so the loop a -> d -> b -> c -> a takes three ingests.
    a, b = ingest(service, task("shop/loop", "Loop A"), task("shop/loop", "Loop B"))
    [c] = ingest(service, task("shop/loop", "Loop C", blocked_by=[b], blocks=[a]))
    [d] = ingest(service, task("shop/loop", "Loop D", blocked_by=[a], blocks=[b]))
    rows = run_inspect(db, "cycle", "shop")
    assert len(rows) == 1
    # a -> d -> b -> c -> a: every id blocks the next, the last blocks the first
    assert rows[0]["cycle"] == [a, d, b, c]
    path = rows[0]["p"]
    assert [rel.type for rel in path.relationships] == ["BLOCKS"] * 4
    assert [row["cycle"] for row in run_inspect(db, "cycle", "shop")] == [[a, d, b, c]]  # same every time
    assert run_inspect(db, "cycle", "shopx") == []  # fenced out


def test_a_done_or_out_of_fence_member_breaks_the_cycle(db, service):
    a, b = ingest(service, task("p", "A"), task("p", "B", status="done"))
    ingest(service, task("p", "C", blocked_by=[b], blocks=[a]), task("p", "D", blocked_by=[a], blocks=[b]))
    assert run_inspect(db, "cycle", "p") == []  # B is done: the loop is not live
    x, y = ingest(service, task("q", "X"), task("q/sub", "Y"))
    ingest(service, task("q", "Z", blocked_by=[y], blocks=[x]), task("q", "W", blocked_by=[x], blocks=[y]))
    assert len(run_inspect(db, "cycle", "q")) == 1
    assert run_inspect(db, "cycle", "q/sub") == []  # only Y is inside this fence


def test_a_tombstoned_member_breaks_the_cycle(db, service):
    a, b = ingest(service, task("t", "A"), task("t", "B"))
    [c] = ingest(service, task("t", "C", blocked_by=[b], blocks=[a]))
    ingest(service, task("t", "D", blocked_by=[a], blocks=[b]))
    assert len(run_inspect(db, "cycle", "t")) == 1
    service.tombstone([c])
    assert run_inspect(db, "cycle", "t") == []


def test_cycle_search_is_polynomial_on_a_dag_with_exponentially_many_paths(db, service):
    """40 layers of 2 fully linked tasks: 2**40 paths. Enumerating them would never finish;
    breadth-first search answers at once. The Neo4j transaction timeout fails a runaway query."""
    layers = [ingest(service, task("wide", "L0 a"), task("wide", "L0 b"))]
    for depth in range(1, 40):
        prev = layers[-1]
        layers.append(ingest(
            service,
            task("wide", f"L{depth} a", blocked_by=prev),
            task("wide", f"L{depth} b", blocked_by=prev),
        ))
    assert run_inspect(db, "cycle", "wide", timeout=30) == []
    [back] = ingest(service, task("wide", "Back edge", blocked_by=layers[-1], blocks=[layers[0][0]]))
    rows = run_inspect(db, "cycle", "wide", timeout=30)
    assert len(rows) == 1
    cycle = rows[0]["cycle"]
    assert cycle[0] == layers[0][0] and cycle[-1] == back
    assert len(cycle) == 41  # one node per layer plus the back edge's task


# ---------------------------------------------------------------- supersede_chains


def test_supersede_chains_run_newest_to_oldest(db, service, shop):
    d1, = ingest(service, {"project_id": "shop", "kind": "decision", "content": "Use Postgres"})
    d2, = ingest(service, {"project_id": "shop", "kind": "decision", "content": "Use MySQL", "supersedes": [d1]})
    d3, = ingest(service, {"project_id": "shop/web", "kind": "decision", "content": "Use SQLite", "supersedes": [d2]})
    ingest(service, {"project_id": "other", "kind": "fact", "content": "Elsewhere", "supersedes": [shop["other_task"]]})
    rows = run_inspect(db, "supersede_chains", "shop")
    chains = [row["chain"] for row in rows]
    assert chains == [
        [shop["new_plan"], shop["old_plan"]],
        [shop["new_blocker"], shop["old_blocker"]],
        [d3, d2, d1],
    ]
    assert rows[2]["headlines"] == ["Use SQLite", "Use MySQL", "Use Postgres"]
    assert all(row["live"] for row in rows)
    assert len(run_inspect(db, "supersede_chains", None)) == 4


# ---------------------------------------------------------------- tallies


def test_tallies_add_up_to_the_totals_a_fenced_pack_shows(db, shop, service):
    rows = run_inspect(db, "tallies", "shop")
    assert {row["project_id"] for row in rows} == {"shop", "shop/web"}  # 'shopx' is outside the fence
    shown = {}
    for row in rows:
        shown[row["section"]] = shown.get(row["section"], 0) + row["in_totals"]
    pack = service.bootstrap({"project_prefix": "shop"})
    assert shown.get("ready", 0) == pack["ready_total"] and shown.get("constraints", 0) == pack["constraints_total"] == 1
    expired = {(row["project_id"], row["section"]): row["expired"] for row in rows}
    assert expired[("shop", "ready")] == 1  # the expired spike is listed (maintained) but not in the total


def test_the_census_rows_are_the_counts_a_digest_shows(db, shop, service):
    rows = run_inspect(db, "census", "shop")
    assert rows and {row["project_id"] for row in rows} <= {"shop", "shop/web"}  # 'shopx' is outside the fence
    for project in sorted({row["project_id"] for row in rows}):
        digest = service.digest({"project_id": project, "token_budget": 0})
        shown = {row["kind"]: {state: row[state] for state in ("live", "superseded", "expired", "tombstoned")}
                 for row in rows if row["project_id"] == project}
        assert shown == digest["counts"], project
        assert sum(row["blocked"] for row in rows if row["project_id"] == project) == digest["blocked_total"], project
    assert any(row["expired"] for row in rows)  # the expired spike: counted as expired, not live


def test_sessions_and_aliases_queries(db):
    service = GraphService(db, clock=fixed_clock(NOW))
    service.ingest({"project_id": "shop", "kind": "fact", "content": "pg is tuned"})
    first = service.session_start({"agent": "a", "project_id": "shop/api", "token_budget": 0})["session_id"]
    service.session_finish({"session_id": first, "handoff": "first handoff"})
    second = service.session_start({"agent": "a", "project_id": "shop/api", "token_budget": 0})["session_id"]
    service.session_finish({"session_id": second, "handoff": "second handoff"})
    service.session_start({"agent": "b", "project_id": "elsewhere", "token_budget": 0})
    rows = [(r["session"], r["handoff"], r["current"]) for r in run_inspect(db, "sessions", "shop")]
    assert sorted(rows) == [(first, "cap-2", False), (second, "cap-3", True)]
    assert len(run_inspect(db, "sessions", None)) == 3
    service.alias({"term": "postgres", "aliases": ["pg"]})
    service.alias({"term": "cache", "aliases": ["redis"], "project_prefix": "shop"})
    service.alias({"term": "queue", "aliases": ["sqs"], "project_prefix": "other"})
    assert [r["term"] for r in run_inspect(db, "aliases", "shop/api")] == ["postgres", "cache"]
    assert len(run_inspect(db, "aliases", None)) == 3


# ---------------------------------------------------------------- claims


def test_claims_shows_who_holds_what_until_when(db, service, shop):
    service.claim({"agent": "agent-1", "task_id": shop["cart"]})
    service.claim({"agent": "agent-2", "task_id": shop["analytics"], "lease_s": 3600})
    service.claim({"agent": "agent-3", "task_id": shop["lookalike"]})
    db._driver.execute_query("MATCH (c:Capsule {id: $id}) SET c.lease_agent = 'agent-0', "
                             "c.lease_until = datetime() - duration('PT1M')", id=shop["notes"])  # run out
    rows = run_inspect(db, "claims", "shop")
    assert [(row["holder"], by_name(shop, [row["id"]])[0], row["live"]) for row in rows] == [
        ("agent-1", "cart", True), ("agent-2", "analytics", True), ("agent-0", "notes", False)]
    first = rows[0]
    assert first["headline"] == "Design the cart API" and first["project_id"] == "shop" and first["ready"] is True
    assert first["lease_until"].to_native() == NOW + timedelta(seconds=900) and first["c"]["id"] == shop["cart"]
    assert [row["holder"] for row in run_inspect(db, "claims", None)] == ["agent-1", "agent-3", "agent-2", "agent-0"]
    assert [row["holder"] for row in run_inspect(db, "claims", "shopx")] == ["agent-3"]
