"""The MCP surface, driven by the official SDK client over BOTH transports against a real Neo4j.

`http`: the Starlette app (with /mcp mounted) served by uvicorn on a free loopback port.
`stdio`: `.venv/bin/graphsvc mcp` spawned as a subprocess, pointed at the same Neo4j.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any, Awaitable, Callable

import anyio
import pytest
from mcp import Client, MCPError, StdioServerParameters

from graphsvc.surfaces.http.app import create_app
from graphsvc.service import GraphService

from .live_server import LiveServer

GRAPHSVC = Path(sys.executable).with_name("graphsvc")
TOOL_NAMES = {
    "memory_bootstrap", "memory_get", "memory_ingest", "memory_relate",
    "memory_update", "memory_tombstone", "memory_list", "memory_retrieve", "memory_digest", "memory_alias",
    "memory_aliases", "memory_session_start", "memory_session_finish", "memory_claim", "memory_release",
}


@pytest.fixture(params=["http", "stdio"])
def connect(request, db, neo4j_target) -> Any:
    """A factory of connected SDK clients for the transport under test."""
    if request.param == "http":
        with LiveServer(create_app(GraphService(db))) as server:
            yield lambda: Client(f"{server.url}/mcp")
        return
    env = {
        "NEO4J_URI": neo4j_target.uri,
        "NEO4J_USER": neo4j_target.user,
        "NEO4J_PASSWORD": neo4j_target.password,
        "GRAPHSVC_NEO4J_TIMEOUT": "30",
        "GRAPHSVC_LOG_LEVEL": "warning",
        # a checkout run with PYTHONPATH (a worktree beside the installed package) serves its own code
        **({"PYTHONPATH": os.environ["PYTHONPATH"]} if os.environ.get("PYTHONPATH") else {}),
    }
    yield lambda: Client(StdioServerParameters(command=str(GRAPHSVC), args=["mcp"], env=env))


def session(connect: Callable[[], Client], scenario: Callable[[Client], Awaitable[Any]]) -> Any:
    """Open one MCP session, run the scenario in it, close it."""

    async def main() -> Any:
        async with connect() as client:
            return await scenario(client)

    return anyio.run(main)


def body_of(result: Any) -> dict[str, Any]:
    """The JSON text content, checked to agree with the structured content."""
    assert len(result.content) == 1 and result.content[0].type == "text"
    body = json.loads(result.content[0].text)
    assert result.structured_content == body
    return body


def capsule_count(db) -> int:
    return db._driver.execute_query("MATCH (c:Capsule) RETURN count(c) AS n").records[0]["n"]


def test_lists_the_tools_with_descriptions_and_model_schemas(connect):
    listing = session(connect, lambda client: client.list_tools())
    tools = {tool.name: tool for tool in listing.tools}
    assert set(tools) == TOOL_NAMES
    for tool in tools.values():
        assert tool.description and len(tool.description) > 200, tool.name
        assert tool.input_schema["type"] == "object", tool.name
        assert tool.input_schema["additionalProperties"] is False, tool.name
        assert tool.output_schema["type"] == "object", tool.name  # the rules' full lint: tests/unit/test_mcp_schemas.py

    bootstrap = tools["memory_bootstrap"]
    # `bookmark` (read-your-writes, graphsvc.store.bookmarks) rides next to the request model's fields
    assert set(bootstrap.input_schema["properties"]) == {"terms", "project_id", "project_prefix", "token_budget",
                                                         "agent", "bookmark"}
    assert bootstrap.input_schema["properties"]["token_budget"]["default"] == 1500
    for words in ("constraints", "next_action", "decisions", "traps", "handles", "cycle",
                  "ADVISORY_NOT_AUTHORITY", "never interprets intent", "token_budget"):
        assert words in bootstrap.description, words
    assert bootstrap.annotations.read_only_hint is True
    # memory_ingest takes {"items": [...]}: one capsule is a list of one (no root anyOf, see mcp_schemas)
    ingest = tools["memory_ingest"]
    assert "list of one" in ingest.description
    assert ingest.input_schema["required"] == ["items"]
    assert ingest.input_schema["properties"]["items"]["items"]["required"] == ["project_id", "kind", "content"]
    destructive = {name for name, tool in tools.items() if tool.annotations.destructive_hint}
    assert destructive == {"memory_update", "memory_relate", "memory_tombstone", "memory_alias"}
    # retrieve, bootstrap and digest each say when to call them rather than the others
    for words in ("memory_bootstrap", "memory_digest", "while you work", "abstain", "alias:<term>"):
        assert words in tools["memory_retrieve"].description, words
    for words in ("START of a session", "memory_bootstrap", "memory_retrieve", "handoff"):
        assert words in tools["memory_digest"].description, words
    assert tools["memory_retrieve"].annotations.read_only_hint is True
    assert tools["memory_retrieve"].input_schema["required"] == ["terms"]
    assert "idempotency_key" in tools["memory_alias"].input_schema["properties"]
    assert "409" in tools["memory_update"].description and "tombstoned" in tools["memory_update"].description
    assert tools["memory_update"].input_schema["required"][0] == "id"
    # claims (SPEC §12): claim before starting, claim again to renew while working
    for words in ("BEFORE you start", "AGAIN before lease_until", "renew", "memory_release", "all_held"):
        assert words in tools["memory_claim"].description, words
    assert tools["memory_claim"].input_schema["required"] == ["agent"]
    assert "idempotency_key" in tools["memory_claim"].input_schema["properties"]
    assert set(tools["memory_release"].input_schema["required"]) == {"agent", "task_id"}
    assert set(tools["memory_relate"].input_schema["properties"]["add"]["items"]["properties"]) == {"type", "from", "to"}


def test_ingest_then_bootstrap_returns_the_pack(connect):
    async def scenario(client: Client) -> tuple[Any, Any, Any]:
        stored = await client.call_tool("memory_ingest", {"items": [
            {"project_id": "shop/api", "kind": "constraint", "content": "Never log card numbers\nPCI scope."},
            {"project_id": "shop/api", "kind": "decision", "content": "Orders live in Postgres"},
            {"project_id": "shop/api", "kind": "failure_pattern", "content": "Webhook test flakes on CI",
             "tier": "stale"},
            {"project_id": "shop/api", "kind": "task", "content": "Design the refund API"},
        ]})
        ids = body_of(stored)["ids"]
        blocked = await client.call_tool("memory_ingest", {
            "project_id": "shop/api", "kind": "task", "content": "Implement refunds", "blocked_by": [ids[3]],
        })
        pack = await client.call_tool("memory_bootstrap", {"project_prefix": "shop", "terms": ["refund"]})
        return stored, blocked, pack

    stored, blocked, pack_result = session(connect, scenario)
    assert not stored.is_error and not blocked.is_error and not pack_result.is_error
    ids = body_of(stored)["ids"]
    assert ids == ["cap-1", "cap-2", "cap-3", "cap-4"]
    assert body_of(blocked)["ids"] == ["cap-5"]
    assert body_of(blocked)["bookmark"].startswith("v1.")  # every write result carries its bookmark

    pack = body_of(pack_result)
    assert pack["advisory"] == "ADVISORY_NOT_AUTHORITY"
    assert [row["headline"] for row in pack["constraints"]] == ["Never log card numbers"]
    assert pack["ready"]["next_action"]["id"] == "cap-4"  # cap-5 waits for cap-4
    assert pack["ready_total"] == 1
    assert [row["id"] for row in pack["decisions"]] == ["cap-2"]
    assert [(row["id"], row["tier"]) for row in pack["traps"]] == [("cap-3", "stale")]
    assert pack["handles"] == ["cap-1", "cap-4", "cap-2", "cap-3"]
    keys = list(json.loads(pack_result.content[0].text))
    assert keys.index("constraints") < keys.index("ready") < keys.index("decisions") < keys.index("traps")


def test_invalid_calls_are_tool_errors_naming_the_field(connect, db):
    async def scenario(client: Client) -> list[Any]:
        return [
            await client.call_tool("memory_ingest", {"items": [
                {"project_id": "shop", "kind": "task", "content": "fine"},
                {"project_id": "shop", "kind": "wish", "content": "not a kind"},
            ]}),
            await client.call_tool("memory_bootstrap", {"token_budget": -1}),
            await client.call_tool("memory_bootstrap", {"project_prefix": "shop/"}),
            await client.call_tool("memory_bootstrap", {"intent": "guess for me"}),
            await client.call_tool("memory_get", {"ids": ["card-1"]}),
        ]

    results = session(connect, scenario)
    assert all(result.is_error for result in results)
    errors = [body_of(result)["error"] for result in results]
    assert [(e["code"], e["field"]) for e in errors] == [
        ("invalid", "items[1].kind"),
        ("bad_request", "token_budget"),
        ("bad_request", "project_prefix"),
        ("bad_request", "intent"),
        ("invalid", "ids[0]"),
    ]
    assert "accepted: agent, project_id, project_prefix, terms, token_budget" in errors[3]["message"]
    assert capsule_count(db) == 0  # the rejected batch wrote nothing, not even its good item


def test_unknown_tool_is_a_protocol_error(connect):
    async def scenario(client: Client) -> None:
        with pytest.raises(MCPError, match="unknown tool 'memory_guess'"):
            await client.call_tool("memory_guess", {})

    session(connect, scenario)


def test_the_write_and_read_tools_drive_one_project_end_to_end(connect):
    async def scenario(client: Client) -> dict[str, Any]:
        async def call(tool: str, args: dict[str, Any]) -> Any:
            return await client.call_tool(tool, args)

        seen: dict[str, Any] = {}
        seen["ingest"] = await call("memory_ingest", {"items": [
            {"project_id": "shop", "kind": "task", "content": "Write the schema"},
            {"project_id": "shop", "kind": "task", "content": "Write the API"},
            {"project_id": "shop", "kind": "decision", "content": "Use REST"},
        ]})
        seen["relate"] = await call("memory_relate", {"add": [{"type": "BLOCKS", "from": "cap-1", "to": "cap-2"}]})
        seen["before"] = await call("memory_bootstrap", {"project_id": "shop"})
        seen["update"] = await call("memory_update", {"id": "cap-1", "status": "done"})
        seen["after"] = await call("memory_bootstrap", {"project_id": "shop"})
        seen["supersede"] = await call("memory_ingest", {"project_id": "shop", "kind": "decision",
                                                         "content": "Use GraphQL", "supersedes": ["cap-3"]})
        seen["get"] = await call("memory_get", {"ids": ["cap-1", "cap-3"]})
        seen["tombstone"] = await call("memory_tombstone", {"ids": ["cap-4"]})
        seen["tombstone_again"] = await call("memory_tombstone", {"ids": ["cap-4"]})
        seen["get_after"] = await call("memory_get", {"ids": ["cap-3", "cap-4"]})
        seen["list"] = await call("memory_list", {"project_id": "shop", "kind": "task", "limit": 1})
        cursor = seen["list"].structured_content["next_cursor"]
        seen["list_next"] = await call("memory_list", {"project_id": "shop", "kind": "task", "cursor": cursor})
        seen["update_unknown"] = await call("memory_update", {"id": "cap-99", "status": "done"})
        seen["update_no_id"] = await call("memory_update", {"status": "done"})
        seen["relate_self"] = await call("memory_relate", {"add": [{"type": "BLOCKS", "from": "cap-1", "to": "cap-1"}]})
        seen["get_unknown"] = await call("memory_get", {"ids": ["cap-1", "cap-99"]})
        return seen

    seen = session(connect, scenario)
    ok = {name: body_of(result) for name, result in seen.items() if not result.is_error}
    errors = {name: body_of(result)["error"] for name, result in seen.items() if result.is_error}
    assert set(errors) == {"update_unknown", "update_no_id", "relate_self", "get_unknown"}

    assert ok["ingest"]["ids"] == ["cap-1", "cap-2", "cap-3"]
    # writes hand back their bookmark (for the next read, on any server); reads never carry one
    writes = {"ingest", "relate", "update", "supersede", "tombstone", "tombstone_again"}
    assert {name for name, body in ok.items() if "bookmark" in body} == writes
    assert ok["relate"]["added"] == 1
    assert ok["before"]["ready"]["next_action"]["id"] == "cap-1"
    assert ok["update"]["status"] == "done"
    assert ok["after"]["ready"]["next_action"]["id"] == "cap-2"  # its blocker is done now
    assert [row["id"] for row in ok["after"]["decisions"]] == ["cap-3"]
    first, old_decision = ok["get"]["capsules"]
    assert first["edges"]["out"] == [{"type": "BLOCKS", "to": "cap-2"}]
    assert old_decision["superseded"] is True
    assert old_decision["edges"]["in"] == [{"type": "SUPERSEDES", "from": "cap-4"}]
    assert ok["tombstone"]["tombstoned"] == ["cap-4"]
    assert ok["tombstone_again"]["already_tombstoned"] == ["cap-4"]
    old_decision, tombstoned = ok["get_after"]["capsules"]
    assert old_decision["superseded"] is False  # its superseder is tombstoned
    assert tombstoned["tombstoned"] is True
    assert [c["id"] for c in ok["list"]["capsules"] + ok["list_next"]["capsules"]] == ["cap-1", "cap-2"]
    assert ok["list_next"]["next_cursor"] is None

    assert (errors["update_unknown"]["code"], errors["update_unknown"].get("field")) == ("not_found", "id")
    assert (errors["update_no_id"]["code"], errors["update_no_id"]["field"]) == ("invalid", "id")
    assert errors["relate_self"]["code"] == "invalid" and errors["relate_self"]["field"].startswith("add[0]")
    assert (errors["get_unknown"]["code"], errors["get_unknown"]["field"]) == ("not_found", "ids[1]")


def test_loopback_mcp_refuses_a_foreign_host_or_origin(db):
    # DNS rebinding: a page on evil.example resolving to 127.0.0.1 sends Host/Origin evil.example.
    import httpx

    from graphsvc.surfaces.commands.serve import LOOPBACK_HOSTS

    app = create_app(GraphService(db), mcp_allowed_hosts=LOOPBACK_HOSTS)
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
    headers = {"content-type": "application/json", "accept": "application/json, text/event-stream"}
    with LiveServer(app) as server:
        ok = httpx.post(server.url + "/mcp", json=body, headers=headers)
        assert ok.status_code == 200, ok.text
        assert any(tool["name"] == "memory_bootstrap" for tool in ok.json()["result"]["tools"])
        foreign_host = httpx.post(server.url + "/mcp", json=body, headers={**headers, "host": "evil.example"})
        assert foreign_host.status_code in (400, 403, 421)
        foreign_origin = httpx.post(server.url + "/mcp", json=body,
                                    headers={**headers, "origin": "http://evil.example"})
        assert foreign_origin.status_code in (400, 403, 421)


def test_every_result_and_tool_error_meets_the_tools_output_schema(connect):
    """Clients validate structuredContent against outputSchema (the SDK client raises on a mismatch for
    results; tool errors are checked here, since they carry their body as structuredContent too)."""
    import jsonschema

    async def scenario(client: Client) -> tuple[Any, list[tuple[str, Any]]]:
        listing = await client.list_tools()
        calls = [
            ("memory_ingest", {"items": [
                {"project_id": "shop", "kind": "constraint", "content": "Never log card numbers"},
                {"project_id": "shop", "kind": "task", "content": "Design refunds"},
                {"project_id": "shop", "kind": "task", "content": "Ship refunds"},
                {"project_id": "shop", "kind": "decision", "content": "Postgres", "valid_to": "2999-01-01T00:00:00Z"},
                {"project_id": "shop", "kind": "failure_pattern", "content": "Flaky webhook", "tier": "stale"},
            ]}),
            ("memory_ingest", {"items": [{"project_id": "shop", "kind": "task", "content": "Test refunds",
                                          "blocked_by": ["cap-2", "cap-3"]}]}),
            ("memory_bootstrap", {"project_prefix": "shop", "terms": ["refund"]}),
            ("memory_bootstrap", {"token_budget": 0}),
            ("memory_bootstrap", {"project_id": "nothing-here"}),
            ("memory_relate", {"add": [{"type": "BLOCKS", "from": "cap-6", "to": "cap-2"}]}),
            ("memory_bootstrap", {"project_id": "shop"}),  # a cycle
            ("memory_relate", {"remove": [{"type": "BLOCKS", "from": "cap-6", "to": "cap-2"}]}),
            ("memory_update", {"id": "cap-2", "status": "done", "idempotency_key": "k-1"}),
            ("memory_get", {"ids": ["cap-2", "cap-3", "cap-4"]}),
            ("memory_tombstone", {"ids": ["cap-5"]}),
            ("memory_list", {"project_id": "shop", "limit": 2}),
            ("memory_list", {"project_id": "shop", "limit": 500}),  # the last page: next_cursor null
            ("memory_alias", {"term": "refund", "aliases": ["chargeback"], "idempotency_key": "k-2"}),
            ("memory_aliases", {"project_id": "shop"}),
            ("memory_retrieve", {"terms": ["chargeback", "cap-5"], "project_prefix": "shop"}),
            ("memory_retrieve", {"terms": ["nothing"], "token_budget": 0}),
            ("memory_session_start", {"agent": "mcp-agent", "project_id": "shop"}),
            ("memory_session_finish", {"session_id": "ses-1", "handoff": "stopped at refunds",
                                       "next_steps": ["test refunds"]}),
            ("memory_digest", {"project_prefix": "shop", "newest": 3}),
            ("memory_digest", {"token_budget": 0}),
            ("memory_claim", {"agent": "mcp-agent", "project_id": "shop", "idempotency_key": "k-3"}),
            ("memory_bootstrap", {"project_id": "shop", "agent": "mcp-agent"}),  # the claimed task first, held
            ("memory_digest", {"project_id": "shop"}),  # held by others
            ("memory_claim", {"agent": "other-agent", "project_id": "shop"}),  # all_held
            ("memory_release", {"agent": "mcp-agent", "task_id": "cap-3"}),
            ("memory_claim", {"agent": "mcp-agent", "project_id": "nothing-here"}),
            # one tool error of each tool
            ("memory_ingest", {"items": [{"project_id": "shop", "kind": "wish", "content": "x"}]}),
            ("memory_bootstrap", {"token_budget": -1}),
            ("memory_get", {"ids": ["cap-404"]}),
            ("memory_relate", {"add": [{"type": "BLOCKS", "from": "cap-2", "to": "cap-2"}]}),
            ("memory_update", {"id": "cap-5", "tier": "stale"}),  # tombstoned: conflict
            ("memory_tombstone", {"ids": []}),
            ("memory_list", {"project_prefix": "shop/"}),
            ("memory_retrieve", {"terms": []}),
            ("memory_alias", {"term": "--", "aliases": ["x"]}),
            ("memory_aliases", {"project_prefix": ""}),
            ("memory_digest", {"newest": 99}),
            ("memory_session_start", {"agent": "no spaces", "project_id": "shop"}),
            ("memory_session_finish", {"session_id": "ses-404", "handoff": "x"}),
            ("memory_claim", {"agent": "no spaces"}),
            ("memory_release", {"agent": "a", "task_id": "cap-404"}),
            # rules about the request as a whole: details[].field is null
            ("memory_relate", {}),
            ("memory_update", {"id": "cap-2"}),
        ]
        return listing, [(name, await client.call_tool(name, args)) for name, args in calls]

    listing, results = session(connect, scenario)
    schemas = {tool.name: tool.output_schema for tool in listing.tools}
    assert all(schema is not None for schema in schemas.values())
    errors = 0
    for name, result in results:
        errors += bool(result.is_error)
        jsonschema.validate(body_of(result), schemas[name])
    assert [name for name, result in results if result.is_error] == [name for name, _ in results[-17:]], \
        [body_of(result) for _, result in results if result.is_error][:3]
    pack = body_of(results[6][1])
    assert pack["ready"]["state"] == "cycle"
    ok = [body_of(result) for name, result in results
          if name in ("memory_claim", "memory_release") and not result.is_error]
    assert ok[0]["claimed"]["id"] == "cap-3" and ok[0]["renewed"] is False
    assert (ok[1]["claimed"], ok[1]["reason"]) == (None, "all_held")
    assert (ok[2]["task_id"], ok[2]["released"]) == ("cap-3", True)
    assert (ok[3]["claimed"], ok[3]["reason"]) == (None, "nothing_ready")
    held_pack = body_of(results[[name for name, _ in results].index("memory_claim") + 1][1])
    assert held_pack["ready"]["next_action"]["held"] == {"lease_until": ok[0]["claimed"]["lease_until"]}


def test_get_and_delete_on_mcp_are_405_so_idle_agents_hold_no_slot(db):
    """An SDK client opens GET /mcp after initialize and keeps it while it idles. Answered with a
    stream, each one held an in-flight slot: here 2 slots, so 2 idle agents would lock out the rest."""
    import httpx

    app = create_app(GraphService(db), max_inflight=2)
    sse = {"accept": "text/event-stream", "mcp-protocol-version": "2025-11-25"}
    with LiveServer(app) as server:
        idle = [httpx.Client(base_url=server.url, timeout=10) for _ in range(8)]
        try:
            for client in idle:  # each keeps its keep-alive connection, as an idle agent does
                with client.stream("GET", "/mcp", headers=sse) as response:
                    assert response.status_code == 405
                    assert response.headers["allow"] == "POST"
                    body = json.loads(response.read())
                    assert "POST each JSON-RPC message" in body["error"]["message"]
            assert idle[0].delete("/mcp").status_code == 405
            for _ in range(3):
                pack = httpx.post(server.url + "/v1/memory_bootstrap", json={}, timeout=30)
                assert pack.status_code == 200, pack.text
                listed = httpx.post(server.url + "/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
                                    headers={"accept": "application/json, text/event-stream",
                                             "mcp-protocol-version": "2025-11-25"}, timeout=30)
                assert listed.status_code == 200, listed.text
        finally:
            for client in idle:
                client.close()


HANDSHAKE_VERSIONS = ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"]


@pytest.mark.parametrize("version", [*HANDSHAKE_VERSIONS, "2026-07-28"])
def test_each_served_protocol_version_makes_a_tool_call(db, version):
    """docs/mcp-clients.md, "Protocol versions": the initialize handshake for each dated revision up to
    2025-11-25, and 2026-07-28's stateless request form (no initialize; every POST carries its
    version, method and client envelope)."""
    import httpx

    from graphsvc.surfaces.mcp import SERVED_PROTOCOL_VERSIONS

    assert version in SERVED_PROTOCOL_VERSIONS
    GraphService(db).ingest({"project_id": "shop", "kind": "task", "content": "Design refunds"})
    accept = {"accept": "application/json, text/event-stream"}
    call = {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
            "params": {"name": "memory_bootstrap", "arguments": {"project_id": "shop", "terms": ["refunds"]}}}
    with LiveServer(create_app(GraphService(db))) as server:
        if version in HANDSHAKE_VERSIONS:
            hello = httpx.post(server.url + "/mcp", headers=accept, json={
                "jsonrpc": "2.0", "id": 1, "method": "initialize",
                "params": {"protocolVersion": version, "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}})
            assert hello.status_code == 200, hello.text
            assert hello.json()["result"]["protocolVersion"] == version
            headers = {**accept, "mcp-protocol-version": version}
        else:
            call["params"]["_meta"] = {"io.modelcontextprotocol/protocolVersion": version,
                                       "io.modelcontextprotocol/clientCapabilities": {},
                                       "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "1"}}
            headers = {**accept, "mcp-protocol-version": version, "mcp-method": "tools/call",
                       "mcp-name": "memory_bootstrap"}
        answer = httpx.post(server.url + "/mcp", headers=headers, json=call, timeout=30)
    assert answer.status_code == 200, answer.text
    result = answer.json()["result"]
    assert not result.get("isError")
    pack = json.loads(result["content"][0]["text"])
    assert pack["ready"]["next_action"]["headline"] == "Design refunds"
    if version >= "2025-06-18":  # structuredContent exists from 2025-06-18 on
        assert result["structuredContent"] == pack
