"""Issue 27's attack matrix: every HTTP route and every MCP tool x every kind of credential, over a
real server and a real Neo4j, with the expected status; no answer to a scoped key names a capsule
outside its scope (unless the caller itself named it)."""

from __future__ import annotations

import json
import re
from typing import Any

import httpx
import pytest

from graphsvc.clock import fixed_clock
from graphsvc.service import GraphService
from graphsvc.surfaces.http.app import all_operations, create_app
from graphsvc.surfaces.mcp import TOOLS

from .bootstrap_support import NOW, Store
from .keys_support import bearer, make_key
from .live_server import LiveServer

TOKEN = "env-token-7c1d-admin"
SECRET_TEXT = "OUTSIDE-SECRET"
#: The credentials every case is tried with; `token` is GRAPHSVC_API_TOKEN (an admin key).
CREDENTIALS = ("none", "malformed", "wrong_secret", "revoked", "read", "write", "admin", "token")
REFUSED = ("none", "malformed", "wrong_secret", "revoked")


@pytest.fixture(scope="module")
def world(database):
    database.wipe_all()
    service = GraphService(database, clock=fixed_clock(NOW))
    service.keys.forget()
    s = Store(database)
    ids = {
        "in_task": s.put("task", "Inside task", project_id="in"),
        "in_task2": s.put("task", "Inside other task", project_id="in/sub"),
        "in_tomb": s.put("fact", "Inside fact to retire", project_id="in"),
        "out_task": s.put("task", f"{SECRET_TEXT} task headline\n{SECRET_TEXT} body", project_id="out"),
        "out_tomb": s.put("fact", f"{SECRET_TEXT} fact", project_id="inx"),  # a sibling name, not a sub-project
    }
    s.block(ids["out_task"], ids["in_task"])
    # a session of a project outside the scoped keys' scope (its finish is an unknown session to them)
    ids["out_session"] = service.session_start({"agent": "outsider", "project_id": "out"})["session_id"]
    keys = {right: make_key(service, right, *(("in",) if right != "admin" else ())) for right in ("read", "write", "admin")}
    revoked = make_key(service, "write", "in")
    service.keys_revoke(revoked["id"])
    headers = {
        "none": {},
        "malformed": bearer("gsk_zz_123"),
        "wrong_secret": bearer(f"gsk_{keys['write']['id']}_{'0' * 64}"),
        "revoked": bearer(revoked["key"]),
        "token": bearer(TOKEN),
        **{right: bearer(key["key"]) for right, key in keys.items()},
    }
    with LiveServer(create_app(service, api_token=TOKEN)) as live:
        yield {"url": live.url, "ids": ids, "headers": headers}


def _cases(ids: dict[str, str]) -> list[tuple[str, str, str, Any, dict[str, int]]]:
    """(name, method, path, json body, expected status for the read / write / admin keys)."""
    everyone = {"read": 200, "write": 200, "admin": 200}
    return [
        ("bootstrap_in", "POST", "/v1/memory_bootstrap", {"project_id": "in"}, everyone),
        ("bootstrap_out", "POST", "/v1/memory_bootstrap", {"project_prefix": "out"}, {"read": 403, "write": 403, "admin": 200}),
        ("bootstrap_unfenced", "POST", "/v1/memory_bootstrap", {}, everyone),
        ("list_in", "GET", "/v1/capsules?project_prefix=in", None, everyone),
        ("list_out", "GET", "/v1/capsules?project_id=inx", None, {"read": 403, "write": 403, "admin": 200}),
        ("list_unfenced", "GET", "/v1/capsules", None, everyone),
        ("get_in", "POST", "/v1/capsules/get", {"ids": [ids["in_task"]]}, everyone),
        ("get_out", "POST", "/v1/capsules/get", {"ids": [ids["out_task"]]}, {"read": 404, "write": 404, "admin": 200}),
        ("get_one_in", "GET", f"/v1/capsules/{ids['in_task']}", None, everyone),
        ("get_one_out", "GET", f"/v1/capsules/{ids['out_task']}", None, {"read": 404, "write": 404, "admin": 200}),
        ("ingest_in", "POST", "/v1/capsules", {"project_id": "in/new", "kind": "fact", "content": "x"},
         {"read": 403, "write": 201, "admin": 201}),
        ("ingest_out", "POST", "/v1/capsules", {"project_id": "out", "kind": "fact", "content": "x"},
         {"read": 403, "write": 403, "admin": 201}),
        ("relate_in", "POST", "/v1/capsules/relate",
         {"remove": [{"type": "BLOCKS", "from": ids["in_task2"], "to": ids["in_task"]}]}, {"read": 403, "write": 200, "admin": 200}),
        ("relate_out", "POST", "/v1/capsules/relate",
         {"remove": [{"type": "BLOCKS", "from": ids["out_tomb"], "to": ids["in_task"]}]}, {"read": 403, "write": 422, "admin": 200}),
        ("update_in", "PATCH", f"/v1/capsules/{ids['in_task']}", {"tier": "active"}, {"read": 403, "write": 200, "admin": 200}),
        ("update_out", "PATCH", f"/v1/capsules/{ids['out_task']}", {"tier": "active"}, {"read": 403, "write": 404, "admin": 200}),
        ("tombstone_in", "POST", "/v1/capsules/tombstone", {"ids": [ids["in_tomb"]]}, {"read": 403, "write": 200, "admin": 200}),
        ("tombstone_out", "POST", "/v1/capsules/tombstone", {"ids": [ids["out_tomb"]]}, {"read": 403, "write": 404, "admin": 200}),
        ("export", "GET", "/v1/capsules/export", None, {"read": 403, "write": 403, "admin": 200}),
        ("import", "POST", "/v1/capsules/import", "{}\n", {"read": 403, "write": 403, "admin": 422}),
        ("keys_list", "GET", "/v1/keys", None, {"read": 403, "write": 403, "admin": 200}),
        ("keys_create", "POST", "/v1/keys", {"label": "made", "rights": "read"}, {"read": 403, "write": 403, "admin": 201}),
        ("keys_revoke", "POST", "/v1/keys/0123456789ab/revoke", None, {"read": 403, "write": 403, "admin": 404}),
        ("metrics", "GET", "/metrics", None, {"read": 403, "write": 403, "admin": 200}),
        ("retrieve_in", "POST", "/v1/memory_retrieve", {"terms": ["inside"], "project_id": "in"}, everyone),
        ("retrieve_out", "POST", "/v1/memory_retrieve", {"terms": ["task"], "project_prefix": "out"},
         {"read": 403, "write": 403, "admin": 200}),
        ("retrieve_unfenced", "POST", "/v1/memory_retrieve", {"terms": ["task", "fact"]}, everyone),
        ("digest_in", "POST", "/v1/memory_digest", {"project_prefix": "in"}, everyone),
        ("digest_out", "POST", "/v1/memory_digest", {"project_id": "out"}, {"read": 403, "write": 403, "admin": 200}),
        ("digest_unfenced", "POST", "/v1/memory_digest", {}, everyone),
        # A watch without an etag answers the current pack at once (SPEC §13), fenced like the pack.
        ("bootstrap_watch_in", "POST", "/v1/memory_bootstrap/watch", {"project_id": "in", "wait_s": 1}, everyone),
        ("bootstrap_watch_out", "POST", "/v1/memory_bootstrap/watch", {"project_prefix": "out", "wait_s": 1},
         {"read": 403, "write": 403, "admin": 200}),
        ("bootstrap_watch_unfenced", "POST", "/v1/memory_bootstrap/watch", {"wait_s": 1}, everyone),
        ("digest_watch_in", "POST", "/v1/memory_digest/watch", {"project_prefix": "in", "wait_s": 1}, everyone),
        ("digest_watch_out", "POST", "/v1/memory_digest/watch", {"project_id": "out", "wait_s": 1},
         {"read": 403, "write": 403, "admin": 200}),
        ("aliases_list", "GET", "/v1/aliases?project_prefix=in", None, everyone),
        ("alias_in", "POST", "/v1/aliases", {"term": "inside", "aliases": ["within"], "project_prefix": "in"},
         {"read": 403, "write": 200, "admin": 200}),
        ("alias_store_wide", "POST", "/v1/aliases", {"term": "task", "aliases": ["chore"]},
         {"read": 403, "write": 403, "admin": 200}),
        ("session_start_in", "POST", "/v1/sessions", {"agent": "insider", "project_id": "in"},
         {"read": 403, "write": 201, "admin": 201}),
        ("session_start_out", "POST", "/v1/sessions", {"agent": "insider", "project_id": "out"},
         {"read": 403, "write": 403, "admin": 201}),
        ("session_finish_out", "POST", f"/v1/sessions/{ids['out_session']}/finish", {"handoff": "done here"},
         {"read": 403, "write": 404, "admin": 200}),
        ("claim_in", "POST", "/v1/memory_claim", {"agent": "insider", "project_prefix": "in"},
         {"read": 403, "write": 200, "admin": 200}),
        ("claim_out", "POST", "/v1/memory_claim", {"agent": "insider", "task_id": ids["out_task"]},
         {"read": 403, "write": 404, "admin": 200}),
        ("release_out", "POST", "/v1/memory_release", {"agent": "insider", "task_id": ids["out_task"]},
         {"read": 403, "write": 404, "admin": 200}),
        ("readyz", "GET", "/readyz", None, everyone),
        ("openapi", "GET", "/openapi.json", None, everyone),
    ]


def _request(http: httpx.Client, method: str, path: str, body: Any, headers: dict[str, str]) -> httpx.Response:
    if isinstance(body, str):
        return http.request(method, path, content=body, headers={**headers, "content-type": "application/x-ndjson"})
    return http.request(method, path, json=body, headers=headers)


def _leaks(text: str, world: dict[str, Any], sent: str) -> list[str]:
    """Out-of-scope capsule ids (as whole ids) or text in `text` that the request itself did not name."""
    found = [SECRET_TEXT] if SECRET_TEXT in text else []
    for name in ("out_task", "out_tomb"):
        capsule_id = world["ids"][name]
        pattern = re.compile(re.escape(capsule_id) + r"(?![0-9])")
        if pattern.search(text) and not pattern.search(sent):
            found.append(capsule_id)
    return found


def test_the_matrix_covers_every_mounted_route(world):
    covered = {(method, re.sub(r"cap-[0-9]+|ses-[0-9]+|[0-9a-f]{12}", "X", path.split("?")[0]))
               for _, method, path, _, _ in _cases(world["ids"])}
    mounted = {(op.method, re.sub(r"\{[a-z_]+\}", "X", op.path)) for op in all_operations()
               if not op.public and op.path != "/mcp"}
    assert mounted <= covered, mounted - covered


@pytest.mark.parametrize("credential", CREDENTIALS)
def test_every_route_answers_each_credential_as_the_matrix_says(world, credential):
    failures = []
    with httpx.Client(base_url=world["url"], timeout=30) as http:
        for name, method, path, body, expected in _cases(world["ids"]):
            want = 401 if credential in REFUSED else expected["admin" if credential == "token" else credential]
            answer = _request(http, method, path, body, world["headers"][credential])
            if answer.status_code != want:
                failures.append(f"{name}: {answer.status_code} != {want}: {answer.text[:200]}")
                continue
            if want >= 400:
                error = answer.json()["error"]
                if want == 403 and "may" not in error["message"]:
                    failures.append(f"{name}: the refusal does not say what the key may do: {error['message']}")
                if want == 401 and "www-authenticate" not in answer.headers:
                    failures.append(f"{name}: 401 without WWW-Authenticate")
            if credential in ("read", "write"):
                leaked = _leaks(answer.text, world, f"{path} {json.dumps(body)}")
                if leaked:
                    failures.append(f"{name}: leaks {leaked}")
    assert not failures, "\n".join(failures)


def _tool_cases(ids: dict[str, str]) -> list[tuple[str, dict[str, Any], dict[str, str]]]:
    """(tool, arguments, expected outcome for read / write / admin: 'ok' or the error code)."""
    reads = {"read": "ok", "write": "ok", "admin": "ok"}
    hidden = {"read": "not_found", "write": "not_found", "admin": "ok"}
    return [
        ("memory_bootstrap", {"project_id": "in"}, reads),
        ("memory_bootstrap", {"project_id": "out"}, {"read": "forbidden", "write": "forbidden", "admin": "ok"}),
        ("memory_bootstrap", {}, reads),
        ("memory_get", {"ids": [ids["in_task"]]}, reads),
        ("memory_get", {"ids": [ids["out_task"]]}, hidden),
        ("memory_list", {"project_prefix": "in"}, reads),
        ("memory_list", {"project_prefix": "out"}, {"read": "forbidden", "write": "forbidden", "admin": "ok"}),
        ("memory_list", {}, reads),
        ("memory_ingest", {"items": [{"project_id": "in", "kind": "fact", "content": "y"}]},
         {"read": "forbidden", "write": "ok", "admin": "ok"}),
        ("memory_ingest", {"items": [{"project_id": "out", "kind": "fact", "content": "y"}]},
         {"read": "forbidden", "write": "forbidden", "admin": "ok"}),
        ("memory_relate", {"remove": [{"type": "BLOCKS", "from": ids["in_task2"], "to": ids["in_task"]}]},
         {"read": "forbidden", "write": "ok", "admin": "ok"}),
        ("memory_relate", {"remove": [{"type": "BLOCKS", "from": ids["out_tomb"], "to": ids["in_task"]}]},
         {"read": "forbidden", "write": "invalid", "admin": "ok"}),
        ("memory_update", {"id": ids["in_task"], "tier": "active"}, {"read": "forbidden", "write": "ok", "admin": "ok"}),
        ("memory_update", {"id": ids["out_task"], "tier": "active"},
         {"read": "forbidden", "write": "not_found", "admin": "ok"}),
        ("memory_tombstone", {"ids": [ids["in_tomb"]]}, {"read": "forbidden", "write": "ok", "admin": "ok"}),
        ("memory_tombstone", {"ids": [ids["out_tomb"]]}, {"read": "forbidden", "write": "not_found", "admin": "ok"}),
        ("memory_retrieve", {"terms": ["task"]}, reads),
        ("memory_retrieve", {"terms": ["task"], "project_id": "out"},
         {"read": "forbidden", "write": "forbidden", "admin": "ok"}),
        ("memory_digest", {}, reads),
        ("memory_digest", {"project_prefix": "out"}, {"read": "forbidden", "write": "forbidden", "admin": "ok"}),
        ("memory_aliases", {}, reads),
        ("memory_alias", {"term": "inside", "aliases": ["within"], "project_prefix": "in/sub"},
         {"read": "forbidden", "write": "ok", "admin": "ok"}),
        ("memory_alias", {"term": "task", "aliases": ["chore"], "project_prefix": "out"},
         {"read": "forbidden", "write": "forbidden", "admin": "ok"}),
        ("memory_session_start", {"agent": "insider", "project_id": "in/sub"},
         {"read": "forbidden", "write": "ok", "admin": "ok"}),
        ("memory_session_finish", {"session_id": ids["out_session"], "handoff": "done here"},
         {"read": "forbidden", "write": "not_found", "admin": "ok"}),
        ("memory_claim", {"agent": "insider"}, {"read": "forbidden", "write": "ok", "admin": "ok"}),
        ("memory_claim", {"agent": "insider", "project_prefix": "out"},
         {"read": "forbidden", "write": "forbidden", "admin": "ok"}),
        ("memory_claim", {"agent": "insider", "task_id": ids["out_task"]},
         {"read": "forbidden", "write": "not_found", "admin": "ok"}),
        ("memory_release", {"agent": "insider", "task_id": ids["out_task"]},
         {"read": "forbidden", "write": "not_found", "admin": "ok"}),
    ]


MCP_HEADERS = {"accept": "application/json, text/event-stream", "mcp-protocol-version": "2025-11-25"}


def test_the_matrix_covers_every_mcp_tool(world):
    assert {tool for tool, _, _ in _tool_cases(world["ids"])} == {spec.name for spec in TOOLS}


@pytest.mark.parametrize("credential", CREDENTIALS)
def test_every_mcp_tool_answers_each_credential_as_the_matrix_says(world, credential):
    failures = []
    with httpx.Client(base_url=world["url"], timeout=30) as http:
        for number, (tool, arguments, expected) in enumerate(_tool_cases(world["ids"])):
            call = {"jsonrpc": "2.0", "id": number, "method": "tools/call", "params": {"name": tool, "arguments": arguments}}
            answer = http.post("/mcp", json=call, headers={**MCP_HEADERS, **world["headers"][credential]})
            if credential in REFUSED:
                if answer.status_code != 401:
                    failures.append(f"{tool} {arguments}: {answer.status_code} != 401")
                continue
            assert answer.status_code == 200, answer.text
            result = answer.json()["result"]
            outcome = json.loads(result["content"][0]["text"])["error"]["code"] if result.get("isError") else "ok"
            want = expected["admin" if credential == "token" else credential]
            if outcome != want:
                failures.append(f"{tool} {arguments}: {outcome} != {want}: {result['content'][0]['text'][:200]}")
            if credential in ("read", "write"):
                leaked = _leaks(answer.text, world, json.dumps(arguments))
                if leaked:
                    failures.append(f"{tool} {arguments}: leaks {leaked}")
    assert not failures, "\n".join(failures)
