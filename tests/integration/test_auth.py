"""SPEC §6 auth over a real uvicorn server, and credentials never leaking into bodies or logs."""

from __future__ import annotations

import json
import logging

import anyio
import httpx
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from pydantic import SecretStr

from graphsvc.config import InvalidNeo4jUri
from graphsvc.store.db import Database
from graphsvc.surfaces.http.app import create_app
from graphsvc.surfaces.http.auth import configured_token
from graphsvc.service import GraphService

from .live_server import LiveServer, free_port

TOKEN = "tok-3f9a-SHOULD-NOT-LEAK"


@pytest.fixture
def server(db):
    with LiveServer(create_app(GraphService(db), api_token=TOKEN)) as live:
        yield live


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def assert_unauthorized(response: httpx.Response) -> None:
    assert response.status_code == 401
    assert response.headers["www-authenticate"].startswith("Bearer")
    error = response.json()["error"]
    assert error["code"] == "unauthorized"
    assert TOKEN not in response.text


@pytest.mark.parametrize("headers", [
    {},
    bearer("wrong-token"),
    bearer(TOKEN + "x"),
    bearer(TOKEN[:-1]),
    {"Authorization": TOKEN},
    {"Authorization": f"Basic {TOKEN}"},
], ids=["missing", "wrong", "longer", "shorter", "no-scheme", "basic"])
def test_protected_routes_reject_missing_or_wrong_tokens(server, headers):
    with httpx.Client(base_url=server.url, headers=headers) as http:
        assert_unauthorized(http.get("/readyz"))
        assert_unauthorized(http.get("/openapi.json"))
        assert_unauthorized(http.get("/no/such/route"))  # the route map is not revealed either
        assert_unauthorized(http.post("/v1/capsules", json={"project_id": "p", "kind": "fact", "content": "x"}))
        assert_unauthorized(http.post("/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"}))


def test_nothing_is_written_without_the_token(server, db):
    with httpx.Client(base_url=server.url) as http:
        http.post("/v1/capsules", json={"project_id": "p", "kind": "fact", "content": "x"})
    assert db._driver.execute_query("MATCH (c:Capsule) RETURN count(c) AS n").records[0]["n"] == 0


def test_right_token_is_accepted_and_healthz_stays_open(server):
    with httpx.Client(base_url=server.url) as http:
        assert http.get("/healthz").status_code == 200
        assert http.get("/readyz", headers=bearer(TOKEN)).status_code == 200
        assert http.get("/openapi.json", headers={"authorization": f"bearer {TOKEN}"}).status_code == 200
        created = http.post("/v1/capsules", headers=bearer(TOKEN),
                            json={"project_id": "p", "kind": "fact", "content": "x"})
        assert created.status_code == 201


def test_mcp_needs_the_token_and_works_with_it(server):
    async def list_tools(headers: dict[str, str]) -> list[str]:
        async with httpx2.AsyncClient(headers=headers) as http:
            async with Client(streamable_http_client(f"{server.url}/mcp", http_client=http)) as client:
                return [tool.name for tool in (await client.list_tools()).tools]

    assert "memory_bootstrap" in anyio.run(list_tools, bearer(TOKEN))
    with pytest.raises(BaseException):  # the SDK surfaces the 401 as a transport/protocol failure
        anyio.run(list_tools, bearer("wrong-token"))


def test_no_token_or_an_empty_one_means_auth_is_off(db):
    assert configured_token(None) is None
    assert configured_token(SecretStr("")) is None
    assert configured_token(SecretStr("abc")) == "abc"
    with LiveServer(create_app(GraphService(db), api_token=None)) as live:
        assert httpx.get(f"{live.url}/readyz").status_code == 200


PASSWORD = "pw-77c1-SHOULD-NOT-LEAK"


def exercise_failing_service(database: Database) -> tuple[list[int], list[str]]:
    """Hit a service whose Neo4j fails with the right token, a wrong one, and over MCP."""
    statuses: list[int] = []
    bodies: list[str] = []
    with LiveServer(create_app(GraphService(database), api_token=TOKEN), wait_for_start_up=False) as live:
        with httpx.Client(base_url=live.url, timeout=30) as http:
            for response in (
                http.get("/readyz", headers=bearer(TOKEN)),
                http.post("/v1/capsules", headers=bearer(TOKEN), json={"project_id": "p", "kind": "fact", "content": "x"}),
                http.get("/readyz", headers=bearer(PASSWORD)),
                http.get("/readyz", headers=bearer(TOKEN + PASSWORD)),
            ):
                statuses.append(response.status_code)
                bodies.append(response.text)

        async def mcp_ingest() -> str:
            async with httpx2.AsyncClient(headers=bearer(TOKEN)) as client:
                async with Client(streamable_http_client(f"{live.url}/mcp", http_client=client)) as mcp:
                    result = await mcp.call_tool("memory_ingest", {"project_id": "p", "kind": "fact", "content": "x"})
                    assert result.is_error
                    return json.dumps(result.structured_content)

        bodies.append(anyio.run(mcp_ingest))
    database.close()
    return statuses, bodies


def assert_no_secret_in(texts: list[str]) -> None:
    for text in texts:
        assert PASSWORD not in text
        assert TOKEN not in text


def test_credentials_never_appear_when_neo4j_is_down(caplog):
    caplog.set_level(logging.DEBUG)  # the driver's own debug log included
    statuses, bodies = exercise_failing_service(
        Database(f"bolt://127.0.0.1:{free_port()}", "neo4j", PASSWORD, timeout=1.0)
    )
    assert statuses == [503, 503, 401, 401]
    mcp_error = json.loads(bodies[-1])["error"]
    assert (mcp_error["code"], mcp_error["retry_after"]) == ("neo4j_unavailable", 2)
    assert any("neo4j" in record.name for record in caplog.records), "the outage should have been logged"
    assert_no_secret_in(bodies + [caplog.text])


def test_credentials_never_appear_when_neo4j_refuses_them(neo4j_target, caplog):
    caplog.set_level(logging.DEBUG)
    # A user name of its own, so failed logins never lock out the suite's `neo4j` user.
    statuses, bodies = exercise_failing_service(Database(neo4j_target.uri, "leak-probe", PASSWORD, timeout=5.0))
    assert 500 not in statuses and 200 not in statuses, statuses
    assert_no_secret_in(bodies + [caplog.text])


@pytest.mark.parametrize("uri", [
    f"bolt://neo4j:{PASSWORD}@127.0.0.1:7687",      # userinfo: the driver refuses it and quotes the URI
    f"neo4j+s://neo4j:{PASSWORD}@db.example:7687",
    f"ftp://neo4j:{PASSWORD}@127.0.0.1:7687",       # a bad scheme
    f"bolt://neo4j:{PASSWORD}@[::1",               # unparseable (the driver raises a bare ValueError)
])
def test_a_neo4j_uri_with_a_password_is_refused_without_echoing_it(uri, caplog):
    caplog.set_level(logging.DEBUG)
    with pytest.raises(InvalidNeo4jUri) as refused:
        Database(uri, "neo4j", "pw", timeout=1.0)
    message = str(refused.value)
    assert "NEO4J_URI" in message and "://***@" in message and "NEO4J_PASSWORD" in message
    assert refused.value.__cause__ is None and refused.value.__suppress_context__  # no chained driver message
    assert_no_secret_in([message, caplog.text])


def test_a_bad_scheme_without_userinfo_names_the_uri():
    with pytest.raises(InvalidNeo4jUri, match=r"NEO4J_URI ftp://127\.0\.0\.1:7687 is not usable: URI scheme 'ftp'"):
        Database("ftp://127.0.0.1:7687", "neo4j", "pw")
