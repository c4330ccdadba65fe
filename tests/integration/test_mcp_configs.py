"""Every client config shown in docs/mcp-clients.md (and the README) works as pasted.

Each snippet is marked `<!-- mcp-config: CLIENT TRANSPORT -->` above its fenced block. The test reads
it the way its client does (a `claude mcp add` line, `.mcp.json`, `claude_desktop_config.json`,
Cursor's and VS Code's `mcp.json`, Codex's `config.toml`), fills in what a user fills in (the clone's
path, this test's Neo4j, the served URL and token) and then:
* stdio: starts the command it names with its arguments and environment, and lists and calls tools;
* http: connects to a served /mcp with its URL and headers, and checks the token is what lets it in.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import sys
import tomllib
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from mcp import Client, StdioServerParameters

from graphsvc.service import GraphService
from graphsvc.surfaces.mcp import TOOLS
from graphsvc.surfaces.http.app import create_app

from .live_server import LiveServer

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "docs" / "mcp-clients.md", ROOT / "README.md"]
MARKED = re.compile(r"<!-- mcp-config: (\S+) (stdio|http) -->\s*```(\w+)\n(.*?)```", re.S)
TOKEN = "config-test-token"
#: What a user writes in place of the snippets' placeholders.
CLONE = "/ABSOLUTE/PATH/TO/graphsvc"
DEFAULT_BOLT = "bolt://127.0.0.1:7687"
DEFAULT_URL = "http://127.0.0.1:8080"


def snippets() -> list[tuple[str, str, str, str]]:
    found = []
    for page in PAGES:
        found += [match.groups() for match in MARKED.finditer(page.read_text())]
    return found


SNIPPETS = snippets()


def test_every_client_has_its_snippets():
    shown = {(client, transport) for client, transport, _, _ in SNIPPETS}
    for client in ("claude-code", "claude-code-project", "cursor", "vscode", "codex"):
        assert {(client, "stdio"), (client, "http")} <= shown, client
    assert ("claude-desktop", "stdio") in shown


def expand(text: str, variables: dict[str, str]) -> str:
    """${VAR}, ${env:VAR}, ${input:ID} and $VAR, as the clients (or the shell) expand them."""
    text = re.sub(r"\$\{(?:env:|input:)?([A-Za-z0-9_-]+)\}", lambda m: variables[m.group(1)], text)
    return re.sub(r"\$([A-Za-z_][A-Za-z0-9_]*)", lambda m: variables[m.group(1)], text)


def read_shell(text: str) -> dict[str, Any]:
    """`claude mcp add …` (stdio after `--`, or `--transport http NAME URL --header …`)."""
    words = shlex.split(text.strip())
    assert words[:3] == ["claude", "mcp", "add"], text
    words = words[3:]
    command = words[words.index("--") + 1:] if "--" in words else []
    options = words[: words.index("--")] if "--" in words else words
    env, headers, positional = {}, {}, []
    i = 0
    while i < len(options):
        if options[i] in ("--env", "-e"):
            key, value = options[i + 1].split("=", 1)
            env[key] = value
            i += 2
        elif options[i] in ("--header", "-H"):
            key, value = options[i + 1].split(":", 1)
            headers[key.strip()] = value.strip()
            i += 2
        elif options[i] in ("--transport", "-t", "--scope", "-s"):
            i += 2
        else:
            positional.append(options[i])
            i += 1
    if command:
        return {"command": command[0], "args": command[1:], "env": env}
    return {"url": positional[1], "headers": headers}


def read_entry(language: str, text: str, variables: dict[str, str]) -> dict[str, Any]:
    if language == "sh":
        return json.loads(expand(json.dumps(read_shell(text)), variables))
    if language == "json":
        document = json.loads(text)
        entry = (document.get("mcpServers") or document["servers"])["graphsvc"]
        if "inputs" in document:  # VS Code prompts for these once; the test answers like a user
            assert [item["id"] for item in document["inputs"]] == ["graphsvc-token"]
        return json.loads(expand(json.dumps(entry), variables))
    assert language == "toml", language
    entry = tomllib.loads(text)["mcp_servers"]["graphsvc"]
    if "url" in entry:
        return {"url": entry["url"], "headers": {"Authorization": f"Bearer {variables[entry['bearer_token_env_var']]}"}}
    env = dict(entry.get("env", {}))
    env.update({name: variables[name] for name in entry.get("env_vars", [])})  # forwarded from Codex's environment
    return {"command": entry["command"], "args": entry["args"], "env": env}


@pytest.mark.parametrize("client,transport,language,text", SNIPPETS,
                         ids=[f"{client}-{transport}" for client, transport, _, _ in SNIPPETS])
def test_snippet_connects(client, transport, language, text, db, neo4j_target):
    variables = {"NEO4J_PASSWORD": neo4j_target.password, "GRAPHSVC_API_TOKEN": TOKEN, "graphsvc-token": TOKEN}
    text = text.replace(CLONE, str(ROOT)).replace(DEFAULT_BOLT, neo4j_target.uri)
    text = text.replace("your-neo4j-password", neo4j_target.password)
    if transport == "stdio":
        entry = read_entry(language, text, variables)
        assert entry["command"] == str(ROOT / ".venv" / "bin" / "graphsvc") and entry["args"] == ["mcp"]
        assert entry["env"]["NEO4J_URI"] == neo4j_target.uri
        # The venv this suite runs in is the one the snippet names once the clone's path is filled in.
        command = str(Path(sys.executable).with_name("graphsvc"))
        env = {"PATH": os.environ.get("PATH", ""), "HOME": os.environ.get("HOME", "/tmp"),
               "GRAPHSVC_LOG_LEVEL": "warning", **entry["env"],
               # a checkout run with PYTHONPATH (a worktree beside the installed package) serves its own code
               **({"PYTHONPATH": os.environ["PYTHONPATH"]} if os.environ.get("PYTHONPATH") else {})}
        env.setdefault("NEO4J_USER", neo4j_target.user)
        env.setdefault("NEO4J_PASSWORD", neo4j_target.password)

        async def main() -> tuple[Any, Any]:
            async with Client(StdioServerParameters(command=command, args=entry["args"], env=env)) as session:
                return await session.list_tools(), await session.call_tool("memory_bootstrap", {"token_budget": 300})

        listing, pack = anyio.run(main)
        assert len(listing.tools) == len(TOOLS)
        assert not pack.is_error and pack.structured_content["budget"]["token_budget"] == 300
        return

    with LiveServer(create_app(GraphService(db), api_token=TOKEN)) as server:
        entry = read_entry(language, text.replace(DEFAULT_URL, server.url), variables)
        assert entry["url"] == f"{server.url}/mcp"
        accept = {"accept": "application/json, text/event-stream"}
        call = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
        headers = {**accept, "mcp-protocol-version": "2025-11-25"}
        assert httpx.post(entry["url"], json=call, headers=headers).status_code == 401  # the header matters
        listed = httpx.post(entry["url"], json=call, headers={**headers, **entry["headers"]})
        assert listed.status_code == 200, listed.text
        assert len(listed.json()["result"]["tools"]) == len(TOOLS)
