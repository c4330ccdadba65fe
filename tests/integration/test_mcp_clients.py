"""graphsvc's MCP tools driven by clients written elsewhere, as a team would wire them.

* the official TypeScript SDK client (`@modelcontextprotocol/sdk`, the version pinned in
  tests/clients/package-lock.json), over streamable HTTP (with and without the API token) and stdio,
  through tests/clients/drive.mjs: its `callTool` validates each result against the tool's
  outputSchema and throws on a mismatch;
* the MCP Inspector CLI (`@modelcontextprotocol/inspector-cli`), which converts `key=value`
  arguments by the property's declared `type`: arrays and integers arrive typed only when the
  input schema says so plainly.

`make test` installs both from npm (`npm ci` in tests/clients); node is required, not optional.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from graphsvc.service import GraphService
from graphsvc.surfaces.http.app import create_app

from .live_server import LiveServer

CLIENTS = Path(__file__).resolve().parents[1] / "clients"
INSPECTOR = CLIENTS / "node_modules" / "@modelcontextprotocol" / "inspector-cli" / "build" / "index.js"
GRAPHSVC = str(Path(sys.executable).with_name("graphsvc"))
TOOL_NAMES = {"memory_bootstrap", "memory_get", "memory_ingest", "memory_relate", "memory_update",
              "memory_tombstone", "memory_list", "memory_retrieve", "memory_digest", "memory_alias", "memory_aliases",
              "memory_session_start", "memory_session_finish", "memory_claim", "memory_release"}


@pytest.fixture(scope="module")
def node() -> str:
    path = shutil.which("node")
    if path is None or not INSPECTOR.exists():
        pytest.fail("the MCP client checks need node and tests/clients/node_modules: run `make test` (it runs "
                    "`npm ci --prefix tests/clients`), or that npm ci yourself")
    return path


def stdio_env(neo4j_target) -> dict[str, str]:
    return {**os.environ, "NEO4J_URI": neo4j_target.uri, "NEO4J_USER": neo4j_target.user,
            "NEO4J_PASSWORD": neo4j_target.password, "GRAPHSVC_NEO4J_TIMEOUT": "30",
            "GRAPHSVC_LOG_LEVEL": "warning"}


def run_node(args: list[str], env: dict[str, str] | None = None) -> Any:
    done = subprocess.run(args, cwd=CLIENTS, env=env, capture_output=True, text=True, timeout=180)
    assert done.returncode == 0, f"{' '.join(args[:4])} … exited {done.returncode}:\n{done.stderr[-3000:]}"
    return json.loads(done.stdout)


@pytest.mark.parametrize("transport", ["http", "http+token", "stdio"])
def test_typescript_sdk_client_lists_calls_and_validates_every_tool(node, db, neo4j_target, transport):
    if transport == "stdio":
        out = run_node([node, "drive.mjs", "stdio", GRAPHSVC, "mcp"], env=stdio_env(neo4j_target))
    else:
        token = "s3cret-token" if transport == "http+token" else None
        with LiveServer(create_app(GraphService(db), api_token=token)) as server:
            out = run_node([node, "drive.mjs", "http", f"{server.url}/mcp", *([token] if token else [])])
        assert out["protocolVersion"] == "2025-11-25"

    assert {tool["name"] for tool in out["tools"]} == TOOL_NAMES
    assert all(tool["hasOutputSchema"] for tool in out["tools"])
    results = out["results"]
    assert [name for name, result in results.items() if result["isError"]] == ["error"]
    assert results["ingest_single"]["structuredContent"]["ids"] == ["cap-1"]
    assert results["ingest_batch"]["structuredContent"]["ids"] == ["cap-2", "cap-3"]
    pack = results["bootstrap"]["structuredContent"]
    assert json.loads(results["bootstrap"]["text"]) == pack
    assert [row["id"] for row in pack["constraints"]] == ["cap-1"]
    assert pack["ready"]["next_action"]["id"] == "cap-2"  # cap-4 waits for it
    assert [row["id"] for row in pack["decisions"]] == ["cap-3"]
    assert pack["budget"]["token_budget"] == 2000
    assert [capsule["id"] for capsule in results["get"]["structuredContent"]["capsules"]] == ["cap-1", "cap-2", "cap-3"]
    assert len(results["list"]["structuredContent"]["capsules"]) == 2
    taught = {key: value for key, value in results["alias"]["structuredContent"].items() if key != "bookmark"}
    assert taught == {"term": "refund", "aliases": ["chargeback"], "project_prefix": "ts"}
    assert results["aliases"]["structuredContent"]["aliases"] == [taught]
    recall = results["retrieve"]["structuredContent"]
    assert json.loads(results["retrieve"]["text"]) == recall and recall["outcome"] == "grounded"
    # "refunds" is another token than "refund": only cap-2 says "refund"
    assert [(row["id"], row["matched_terms"]) for row in recall["results"]] == [("cap-2", ["alias:chargeback"])]
    assert results["session_finish"]["structuredContent"]["handoff_id"] == "cap-5"
    digest = results["digest"]["structuredContent"]
    assert json.loads(results["digest"]["text"]) == digest and digest["handoff"]["id"] == "cap-5"
    assert digest["ready"] == pack["ready"] and digest["blocked"] == [
        {"blockers": 1, "headline": "Implement refunds", "id": "cap-4", "project_id": "ts/sdk"}]
    claimed = results["claim"]["structuredContent"]["claimed"]
    assert claimed["id"] == "cap-2" and results["claim"]["structuredContent"]["renewed"] is False
    assert results["release"]["structuredContent"]["released"] is True
    error = results["error"]["structuredContent"]["error"]
    assert error["field"] == "project_prefix" and error["code"] == "bad_request"


def inspector(node: str, target: list[str], method: str, tool: str | None = None, env: dict[str, str] | None = None,
              **args: str) -> Any:
    command = [node, str(INSPECTOR), *target, "--method", method]
    if tool:
        command += ["--tool-name", tool]
    for key, value in args.items():
        command += ["--tool-arg", f"{key}={value}"]
    return run_node(command, env=env)


@pytest.mark.parametrize("transport", ["http", "stdio"])
def test_inspector_cli_sends_arrays_and_integers_typed(node, db, neo4j_target, transport):
    def scenario(target: list[str], env: dict[str, str] | None) -> dict[str, Any]:
        run = {
            "list": inspector(node, target, "tools/list", env=env),
            "single": inspector(node, target, "tools/call", "memory_ingest", env,
                                items='[{"project_id": "cli", "kind": "task", "content": "Design refunds"}]'),
            "batch": inspector(node, target, "tools/call", "memory_ingest", env, items=json.dumps([
                {"project_id": "cli", "kind": "constraint", "content": "Never log card numbers"},
                {"project_id": "cli", "kind": "task", "content": "Ship refunds", "blocked_by": ["cap-1"]}])),
            "pack": inspector(node, target, "tools/call", "memory_bootstrap", env,
                              terms='["refund", "card numbers"]', token_budget="900", project_id="cli"),
            "get": inspector(node, target, "tools/call", "memory_get", env, ids='["cap-1", "cap-3"]'),
            "error": inspector(node, target, "tools/call", "memory_get", env, ids='["cap-404"]'),
        }
        return run

    if transport == "stdio":
        out = scenario([GRAPHSVC, "mcp"], stdio_env(neo4j_target))
    else:
        with LiveServer(create_app(GraphService(db))) as server:
            out = scenario([f"{server.url}/mcp", "--transport", "http"], None)

    assert {tool["name"] for tool in out["list"]["tools"]} == TOOL_NAMES
    assert out["single"]["structuredContent"]["ids"] == ["cap-1"]
    assert out["batch"]["structuredContent"]["ids"] == ["cap-2", "cap-3"]
    pack = out["pack"]
    assert not pack.get("isError"), pack
    assert pack["structuredContent"]["budget"]["token_budget"] == 900  # the integer arrived as one
    assert pack["structuredContent"]["ready"]["next_action"]["id"] == "cap-1"
    assert [row["id"] for row in pack["structuredContent"]["constraints"]] == ["cap-2"]
    assert [c["id"] for c in out["get"]["structuredContent"]["capsules"]] == ["cap-1", "cap-3"]
    assert out["get"]["structuredContent"]["capsules"][1]["edges"]["in"] == [{"type": "BLOCKS", "from": "cap-1"}]
    assert out["error"]["isError"] is True
    assert out["error"]["structuredContent"]["error"]["field"] == "ids[0]"
