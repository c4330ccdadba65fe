"""`graphsvc demo`: the sample project loads once, and its pack shows every section."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from graphsvc.surfaces.commands.demo import demo_is_loaded, load_demo, pack_request
from graphsvc.demo_data import CAPSULES, ingest_item, ingest_waves
from graphsvc.surfaces.http.app import create_app
from graphsvc.service import GraphService

from .live_server import LiveServer

GRAPHSVC = Path(sys.executable).with_name("graphsvc")


def capsule_count(db, where: str = "true") -> int:
    query = f"MATCH (c:Capsule) WHERE {where} RETURN count(c) AS n"
    return db._driver.execute_query(query).records[0]["n"]


def demo_command(neo4j_target, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    environment = {
        "PATH": "/usr/bin:/bin",
        "NEO4J_URI": neo4j_target.uri,
        "NEO4J_USER": neo4j_target.user,
        "NEO4J_PASSWORD": neo4j_target.password,
        "GRAPHSVC_NEO4J_TIMEOUT": "30",
        "GRAPHSVC_LOG_LEVEL": "warning",
        **(env or {}),
    }
    result = subprocess.run([str(GRAPHSVC), "demo", *args], env=environment, capture_output=True, text=True,
                            timeout=120)
    assert result.returncode == 0, result.stderr
    return result


def printed_pack(stdout: str) -> tuple[str, dict[str, Any]]:
    """The command prints one explanatory line, then the pack as pretty JSON."""
    first, _, rest = stdout.partition("\n")
    return first, json.loads(rest)


def headlines(rows: list[dict[str, Any]]) -> list[str]:
    return [row["headline"] for row in rows]


def assert_demo_pack(pack: dict[str, Any]) -> None:
    assert pack["scope"] == {"project_prefix": "shop"}
    assert pack["constraints_total"] == 6  # the expired code freeze is not among them
    assert len(pack["constraints"]) == 6
    assert "Code freeze for the autumn sale" not in headlines(pack["constraints"])
    assert headlines(pack["constraints"])[0] == "Never store or log raw card numbers"  # matches 'stripe'
    ready = pack["ready"]
    assert ready["state"] == "next_action"
    assert ready["next_action"]["headline"] == "Add POST /v2/orders/{id}/refunds"  # its blocker is done
    assert pack["ready_total"] == 3
    assert set(headlines(ready["ready"])) == {
        "Accessibility audit of the guest checkout (WCAG 2.1 AA)",
        "Create guest customer records with e-mail verification",
    }
    decisions = headlines(pack["decisions"])
    assert pack["decisions_total"] == 4
    assert "API authentication uses OIDC access tokens from Keycloak" in decisions
    assert "API authentication uses signed session cookies" not in decisions  # superseded
    traps = {row["headline"]: row for row in pack["traps"]}
    assert pack["traps_total"] == 4
    assert headlines(pack["traps"])[0] == "Stripe webhooks arrive out of order and more than once"
    assert traps["CI tests fail when Redis is not ready yet"]["tier"] == "stale"
    assert pack["budget"]["used_tokens"] <= pack["budget"]["token_budget"]


def test_waves_put_every_reference_in_an_earlier_batch():
    seen: set[str] = set()
    for wave in ingest_waves(CAPSULES):
        for capsule in wave:
            assert set(capsule.blocked_by + capsule.supersedes) <= seen, capsule.key
        seen |= {capsule.key for capsule in wave}
    assert seen == {capsule.key for capsule in CAPSULES}
    assert len(seen) == len(CAPSULES)  # keys are unique


def test_demo_loads_through_the_service_object(db):
    service = GraphService(db)
    assert not demo_is_loaded(service)
    ids = load_demo(service, service.clock())
    assert len(ids) == len(CAPSULES) == capsule_count(db)
    assert demo_is_loaded(service)
    assert_demo_pack(service.bootstrap(pack_request()))


def test_demo_command_through_http_is_idempotent(db, neo4j_target):
    token = "demo-test-token"
    with LiveServer(create_app(GraphService(db), api_token=token)) as server:
        first = demo_command(neo4j_target, "--url", server.url, env={"GRAPHSVC_API_TOKEN": token})
        count = capsule_count(db)
        second = demo_command(neo4j_target, "--url", server.url, env={"GRAPHSVC_API_TOKEN": token})

    assert count == len(CAPSULES)
    assert capsule_count(db) == count  # the second run wrote nothing
    assert "Loaded the demo project 'shop'" in first.stderr
    assert "already loaded" in second.stderr
    line, pack = printed_pack(first.stdout)
    assert line.startswith("memory_bootstrap pack for project_prefix 'shop'")
    assert "Neo4j Browser" in line and "cypher/inspect/project_graph.cypher" in line
    assert_demo_pack(pack)
    assert printed_pack(second.stdout)[1]["handles"] == pack["handles"]


def test_a_load_that_failed_part_way_is_reported_not_called_loaded(db, neo4j_target):
    service = GraphService(db)
    ids: dict[str, str] = {}
    waves = ingest_waves(CAPSULES)
    for wave in waves[:2]:  # as if the third wave's batch had failed
        assigned = service.ingest({"items": [ingest_item(capsule, ids, service.clock()) for capsule in wave]})["ids"]
        ids.update(zip((capsule.key for capsule in wave), assigned))
    stored = len(waves[0]) + len(waves[1])
    assert not demo_is_loaded(service)

    result = demo_command(neo4j_target)

    assert f"holds {stored} of the {len(CAPSULES)} sample capsules and 0 other" in result.stderr
    assert "nothing written" in result.stderr and "--reset" in result.stderr
    assert capsule_count(db) == stored
    reloaded = demo_command(neo4j_target, "--reset")
    assert capsule_count(db) == len(CAPSULES)
    assert_demo_pack(printed_pack(reloaded.stdout)[1])


def test_reset_reloads_only_the_demo_subtree(db, neo4j_target):
    service = GraphService(db)
    service.ingest({"items": [
        {"project_id": "shopx", "kind": "fact", "content": "not part of the demo"},
        {"project_id": "other", "kind": "task", "content": "not part of the demo either"},
    ]})
    demo_command(neo4j_target)
    service.ingest({"project_id": "shop/api", "kind": "fact", "content": "added after the demo"})
    assert capsule_count(db, "c.project_id STARTS WITH 'shop/' OR c.project_id = 'shop'") == len(CAPSULES) + 1

    result = demo_command(neo4j_target, "--reset")

    assert f"Deleted {len(CAPSULES) + 1} capsules" in result.stderr
    assert capsule_count(db, "c.project_id STARTS WITH 'shop/' OR c.project_id = 'shop'") == len(CAPSULES)
    assert capsule_count(db, "c.project_id IN ['shopx', 'other']") == 2
    assert_demo_pack(printed_pack(result.stdout)[1])
