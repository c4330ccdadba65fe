"""SPEC §4 budget on the wire: used_tokens counts the exact body received, envelope included.

Real Neo4j, real uvicorn on a loopback port, real bytes. For random small stores and budgets
(hypothesis) and for a sweep over the demo project: the body decoded as UTF-8 is the canonical
serialization of itself, `used_tokens == ceil(len(body) / 4)` counting characters (stores hold
multi-byte text so bytes and characters differ), `used_tokens <= token_budget` whenever
`token_budget >= floor_tokens`, the kept rows are a priority prefix, and the floors survive any
positive budget. MCP's text content is the same string as the HTTP body; the CLI's --compact
prints it too.
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
from datetime import timedelta
from typing import Any

import anyio
import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from mcp import Client

from graphsvc.clock import fixed_clock
from graphsvc.core.canonical import canonical_json
from graphsvc.service import GraphService
from graphsvc.surfaces.commands.demo import load_demo, pack_request
from graphsvc.surfaces.http.app import create_app

from .bootstrap_support import NOW, ids, ready_ids
from .live_server import LiveServer

HUGE = 1_000_000


def post_pack(server: LiveServer, body: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """The exact body text received (UTF-8 decoded) and its parsed pack."""
    response = httpx.post(f"{server.url}/v1/memory_bootstrap", json=body, timeout=60)
    assert response.status_code == 200, response.text
    assert response.headers["content-type"] == "application/json"
    text = response.content.decode("utf-8")
    return text, json.loads(text)


def fill_order(pack: dict[str, Any]) -> list[str]:
    """Content row ids after the floors, in fill order: constraints[1:], ready rows, decisions, traps."""
    ready = ready_ids(pack)[1:] if "next_action" in pack.get("ready", {}) else []
    return ids(pack.get("constraints"))[1:] + ready + ids(pack.get("decisions")) + ids(pack.get("traps"))


def floors_of(pack: dict[str, Any]) -> tuple[Any, Any]:
    ready = {key: value for key, value in pack["ready"].items() if key != "ready"}
    return (pack.get("constraints") or [None])[0], ready


def check_contract(text: str, pack: dict[str, Any], full: dict[str, Any], budget: int) -> None:
    """Every budget sentence of SPEC §4, checked on one received body against the untrimmed pack."""
    spent = pack["budget"]
    assert text == canonical_json(pack)  # the body is the canonical serialization, byte for byte
    assert spent["used_tokens"] == math.ceil(len(text) / 4)  # characters, not bytes
    assert spent["token_budget"] == budget
    assert spent["floor_tokens"] == full["budget"]["floor_tokens"]
    everything = fill_order(full)
    if budget == 0:
        assert not {"constraints", "ready", "decisions", "traps", "handles"} & set(pack)
        return
    if budget >= spent["floor_tokens"]:
        assert spent["used_tokens"] <= budget
    else:  # the one sanctioned excess: the floors, nothing after them
        assert fill_order(pack) == [] and spent["used_tokens"] <= spent["floor_tokens"]
    assert floors_of(pack) == floors_of(full)
    kept = fill_order(pack)
    assert kept == everything[: len(kept)]
    assert spent["trimmed_by_budget"] == len(everything) - len(kept)


# ------------------------------------------------------------------ random stores over HTTP

WORDS = ["refund", "stripe", "Café", "東京", "naïve", "—", "🙂", "retry", "pool", "deploy", "x" * 25]
texts = st.lists(st.sampled_from(WORDS), min_size=1, max_size=40).map(" ".join)
capsules = st.fixed_dictionaries(
    {
        "kind": st.sampled_from(["constraint", "task", "task", "decision", "failure_pattern", "fact"]),
        "project_id": st.sampled_from(["p", "p/a", "q"]),
        "content": st.tuples(texts, st.none() | texts).map(lambda parts: "\n".join(p for p in parts if p)),
        "age": st.sampled_from([0, 3, 40, 400]),
        "tier": st.sampled_from([None, None, "stale"]),
        "done": st.booleans(),
    }
)
stores = st.fixed_dictionaries(
    {
        "capsules": st.lists(capsules, max_size=24),
        "blocks": st.lists(st.tuples(st.integers(0, 23), st.integers(0, 23)), max_size=6),
    }
)
requests = st.fixed_dictionaries(
    {},
    optional={
        "project_prefix": st.just("p"),
        "terms": st.lists(st.sampled_from(WORDS + ["cafe", "--"]), max_size=3),
    },
)


def load(service: GraphService, store: dict[str, Any]) -> None:
    """Ingest the drawn capsules (one batch per age) and the drawn BLOCKS edges between tasks."""
    made: list[tuple[str, str]] = []  # (id, kind)
    for age in sorted({c["age"] for c in store["capsules"]}):
        items = []
        for c in (c for c in store["capsules"] if c["age"] == age):
            item = {"project_id": c["project_id"], "kind": c["kind"], "content": c["content"]}
            if c["tier"] and c["kind"] != "constraint":
                item["tier"] = c["tier"]
            if c["kind"] == "task" and c["done"]:
                item["status"] = "done"
            items.append(item)
        written = GraphService(service.db, clock=fixed_clock(NOW - timedelta(days=age))).ingest({"items": items})
        made.extend(zip(written["ids"], (item["kind"] for item in items)))
    tasks = [capsule_id for capsule_id, kind in made if kind == "task"]
    edges = {(tasks[a % len(tasks)], tasks[b % len(tasks)]) for a, b in store["blocks"]} if tasks else set()
    edges = [{"type": "BLOCKS", "from": a, "to": b} for a, b in sorted(edges) if a != b]
    if edges:  # may well close a cycle: the fail-closed marker is a floor too
        service.relate({"add": edges})


@pytest.fixture
def server(database):
    service = GraphService(database, clock=fixed_clock(NOW))
    with LiveServer(create_app(service)) as live:
        live.service = service
        yield live


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(store=stores, request=requests, offsets=st.lists(st.integers(-15, 60), min_size=2, max_size=4),
       spare=st.integers(1, 2_500))  # fmt: skip
def test_used_tokens_is_the_received_body_for_random_stores_and_budgets(server, store, request, offsets, spare):
    server.service.db.wipe_all()
    load(server.service, store)
    full_text, full = post_pack(server, {**request, "token_budget": HUGE})
    check_contract(full_text, full, full, HUGE)
    floor = full["budget"]["floor_tokens"]
    budgets = {0, floor, spare, full["budget"]["used_tokens"]} | {max(1, floor + offset) for offset in offsets}
    for budget in sorted(budgets):
        text, pack = post_pack(server, {**request, "token_budget": budget})
        check_contract(text, pack, full, budget)


# ------------------------------------------------------------------ the demo project, swept


@pytest.fixture
def demo_server(database):
    database.wipe_all()
    service = GraphService(database, clock=fixed_clock(NOW))
    load_demo(service, NOW)
    with LiveServer(create_app(service)) as live:
        yield live


@pytest.mark.parametrize("request_body", [{"project_prefix": "shop"}, pack_request()], ids=["no-terms", "demo-terms"])
def test_a_budget_sweep_over_the_demo_project_is_honest_at_every_step(demo_server, request_body):
    full_text, full = post_pack(demo_server, {**request_body, "token_budget": HUGE})
    check_contract(full_text, full, full, HUGE)
    everything = full["budget"]["used_tokens"]
    assert everything > 400  # so the sweep crosses trims in every section
    sweep = sorted({0, 1, 50, 100, 200, 400, 800, 1500, full["budget"]["floor_tokens"], everything}
                   | set(range(full["budget"]["floor_tokens"] - 3, everything + 4, 19)))
    kept_before = -1
    for budget in sweep:
        text, pack = post_pack(demo_server, {**request_body, "token_budget": budget})
        check_contract(text, pack, full, budget)
        kept = len(fill_order(pack)) if budget else -1
        assert kept >= kept_before  # a bigger budget never keeps less
        kept_before = kept


def test_the_issue_example_now_reports_what_it_sends(demo_server):
    text, pack = post_pack(demo_server, {"project_prefix": "shop", "token_budget": 400})
    assert pack["budget"]["used_tokens"] == math.ceil(len(text) / 4) <= 400


# ------------------------------------------------------------------ MCP and CLI say the same string


def test_mcp_text_is_the_http_body_for_the_same_store_request_and_clock(demo_server):
    requests_ = [{"project_prefix": "shop", "token_budget": 300}, {**pack_request(), "token_budget": 1500},
                 {"project_prefix": "shop", "token_budget": 0}]  # fmt: skip

    async def scenario() -> list[Any]:
        async with Client(f"{demo_server.url}/mcp") as client:
            return [await client.call_tool("memory_bootstrap", body) for body in requests_]

    results = anyio.run(scenario)
    for body, result in zip(requests_, results):
        text, pack = post_pack(demo_server, body)
        assert not result.is_error
        assert len(result.content) == 1 and result.content[0].text == text
        assert result.structured_content == pack


def test_cli_compact_prints_the_http_body_and_reports_its_length(demo_server, neo4j_target):
    env = {"NEO4J_URI": neo4j_target.uri, "NEO4J_USER": neo4j_target.user, "NEO4J_PASSWORD": neo4j_target.password,
           "PATH": "/usr/bin:/bin"}
    text, pack = post_pack(demo_server, {"project_prefix": "shop", "terms": ["stripe"], "token_budget": 500})
    run = subprocess.run(
        [sys.executable, "-m", "graphsvc", "bootstrap", "--project-prefix", "shop", "--terms", "stripe",
         "--token-budget", "500", "--now", NOW.isoformat(), "--compact"],
        capture_output=True, text=True, env=env, timeout=120, check=True,
    )
    assert run.stdout == text + "\n"
    assert f"used_tokens {pack['budget']['used_tokens']} = ceil({len(text)} characters" in run.stderr
