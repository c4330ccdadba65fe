"""The /v1/capsules routes over HTTP (Starlette TestClient) against a real Neo4j, and /openapi.json parity."""

from __future__ import annotations

import base64
import json
from datetime import datetime, timezone

import pytest
from starlette.routing import Route
from starlette.testclient import TestClient

from graphsvc.clock import fixed_clock
from graphsvc.store.db import Database
from graphsvc.surfaces.http.app import create_app
from graphsvc.service import GraphService
from tests.conftest import wipe
from tests.integration.live_server import started_client

NOW = datetime(2026, 12, 1, 12, 0, tzinfo=timezone.utc)


@pytest.fixture
def client(db):
    with started_client(create_app(GraphService(db, clock=fixed_clock(NOW)))) as http:
        yield http


def error_of(response, status: int) -> dict:
    assert response.status_code == status, response.text
    return response.json()["error"]


def seed(client) -> None:
    response = client.post("/v1/capsules", json={"items": [
        {"project_id": "nott", "kind": "task", "content": "first task"},
        {"project_id": "nott/x", "kind": "task", "content": "second task"},
        {"project_id": "nottx", "kind": "decision", "content": "a decision"},
    ]})
    assert response.status_code == 201 and response.json() == {"ids": ["cap-1", "cap-2", "cap-3"]}


def test_ingest_single_and_bad_batch(client):
    assert client.post("/v1/capsules", json={"project_id": "nott", "kind": "fact", "content": "x"}).json() == {
        "ids": ["cap-1"]}
    error = error_of(client.post("/v1/capsules", json={"items": [
        {"project_id": "nott", "kind": "fact", "content": "ok"},
        {"project_id": "nott", "kind": "fact", "content": "x", "blocks": ["cap-1"]}]}), 422)
    assert error["code"] == "invalid" and error["field"] == "items[1].blocks" and "BLOCKS" in error["message"]
    error_of(client.post("/v1/capsules", content=b"{oops"), 400)


def test_get_one_and_many(client):
    seed(client)
    one = client.get("/v1/capsules/cap-2")
    assert one.status_code == 200 and one.json()["headline"] == "second task"
    many = client.post("/v1/capsules/get", json={"ids": ["cap-3", "cap-1"]}).json()
    assert [c["id"] for c in many["capsules"]] == ["cap-3", "cap-1"]
    error = error_of(client.get("/v1/capsules/cap-9"), 404)
    assert error["field"] == "id" and "cap-9" in error["message"]
    assert error_of(client.get("/v1/capsules/nine"), 422)["field"] == "id"
    error = error_of(client.post("/v1/capsules/get", json={"ids": ["cap-1", "cap-8"]}), 404)
    assert error["field"] == "ids[1]" and "cap-8" in error["message"]
    assert error_of(client.post("/v1/capsules/get", json={"ids": []}), 422)["field"] == "ids"
    error = error_of(client.post("/v1/capsules/get", json={"id": "cap-1"}), 422)
    assert error["field"] == "ids" and "is required" in error["message"]
    assert {"field": "id", "rule": "is not an accepted field (accepted: ids)"} in error["details"]


def test_relate_update_tombstone(client):
    seed(client)
    response = client.post("/v1/capsules/relate", json={"add": [{"type": "BLOCKS", "from": "cap-1", "to": "cap-2"}]})
    assert response.status_code == 200 and response.json()["added"] == 1
    error = error_of(client.post("/v1/capsules/relate", json={"add": [
        {"type": "BLOCKS", "from": "cap-1", "to": "cap-3"}]}), 422)
    assert error["field"] == "add[0].to" and "task/epic" in error["message"]
    assert error_of(client.post("/v1/capsules/relate", json={"add": [
        {"type": "SUPERSEDES", "from": "cap-3", "to": "cap-3"}]}), 422)["field"] == "add[0]"

    updated = client.patch("/v1/capsules/cap-1", json={"status": "done"})
    assert updated.status_code == 200 and updated.json()["status"] == "done"
    assert updated.json()["edges"]["out"] == [{"type": "BLOCKS", "to": "cap-2"}]
    assert error_of(client.patch("/v1/capsules/cap-3", json={"status": "done"}), 422)["field"] == "status"
    assert error_of(client.patch("/v1/capsules/cap-7", json={"tier": "stale"}), 404)["field"] == "id"

    assert client.post("/v1/capsules/tombstone", json={"ids": ["cap-3"]}).json() == {
        "tombstoned": ["cap-3"], "already_tombstoned": []}
    assert client.post("/v1/capsules/tombstone", json={"ids": ["cap-3"]}).json() == {
        "tombstoned": [], "already_tombstoned": ["cap-3"]}
    assert error_of(client.patch("/v1/capsules/cap-3", json={"tier": "stale"}), 409)["code"] == "conflict"
    assert error_of(client.post("/v1/capsules/tombstone", json={"ids": ["cap-5"]}), 404)["field"] == "ids[0]"


def test_list_with_query_parameters(client):
    seed(client)
    page = client.get("/v1/capsules", params={"project_prefix": "nott", "limit": "1"}).json()
    assert [c["id"] for c in page["capsules"]] == ["cap-1"]
    page = client.get("/v1/capsules", params={"project_prefix": "nott", "limit": "1", "cursor": page["next_cursor"]})
    assert [c["id"] for c in page.json()["capsules"]] == ["cap-2"] and page.json()["next_cursor"] is None
    assert [c["id"] for c in client.get("/v1/capsules?kind=decision").json()["capsules"]] == ["cap-3"]
    assert error_of(client.get("/v1/capsules?project_prefix=nott/"), 400)["field"] == "project_prefix"
    assert error_of(client.get("/v1/capsules?limit=abc"), 400)["field"] == "limit"
    assert error_of(client.get("/v1/capsules?kind=task&kind=epic"), 400)["field"] == "kind"
    bad = base64.urlsafe_b64encode(b"offset:3").decode()
    assert error_of(client.get(f"/v1/capsules?cursor={bad}"), 400)["field"] == "cursor"


def test_export_import_round_trip_over_http(client, db):
    seed(client)
    client.post("/v1/capsules/relate", json={"add": [{"type": "SUPERSEDES", "from": "cap-2", "to": "cap-1"}]})
    exported = client.get("/v1/capsules/export")
    assert exported.status_code == 200
    assert exported.headers["content-type"].startswith("application/x-ndjson")
    assert [json.loads(line).popitem()[0] for line in exported.text.splitlines()] == ["capsule"] * 3 + ["edge"]
    again = client.post("/v1/capsules/import", content=exported.content)
    assert again.status_code == 201 and again.json()["already_present"] == {"capsules": 3, "edges": 1}
    changed = exported.content.replace(b'"tier":"active"', b'"tier":"stale"', 1)
    assert changed != exported.content
    error = error_of(client.post("/v1/capsules/import", content=changed), 409)
    assert error["field"] == "line[1].capsule.id" and "(tier)" in error["message"]
    wipe(db)
    imported = client.post("/v1/capsules/import", content=exported.content,
                           headers={"content-type": "application/x-ndjson"})
    assert imported.status_code == 201 and imported.json() == {"capsules": 3, "edges": 1, "already_present": {"capsules": 0, "edges": 0}}
    assert client.get("/v1/capsules/export").content == exported.content
    wipe(db)
    error = error_of(client.post("/v1/capsules/import", content=b'{"capsule": {}}\n'), 422)
    assert error["field"].startswith("line[1].capsule")
    error_of(client.post("/v1/capsules/import", content=b""), 400)


def test_export_is_503_when_neo4j_is_unreachable():
    down = Database("bolt://127.0.0.1:1", "neo4j", "irrelevant", timeout=1.0)
    try:
        with TestClient(create_app(GraphService(down))) as http:
            response = http.get("/v1/capsules/export")
            assert response.status_code == 503 and response.headers["retry-after"]
            assert response.json()["error"]["code"] == "neo4j_unavailable"
            assert http.get("/v1/capsules/cap-1").status_code == 503
    finally:
        down.close()


def test_openapi_lists_exactly_the_mounted_v1_routes(client):
    app = client.app
    mounted = {(method, route.path) for route in app.routes if isinstance(route, Route)
               and route.path.startswith("/v1") for method in route.methods or () if method != "HEAD"}
    document = client.get("/openapi.json").json()
    documented = {(method.upper(), path) for path, entry in document["paths"].items()
                  if path.startswith("/v1") for method in entry}
    assert mounted == documented
    assert ("GET", "/v1/capsules/{capsule_id}") in mounted and ("POST", "/v1/capsules/import") in mounted


def _refs(node) -> list[str]:
    if isinstance(node, dict):
        return ([node["$ref"]] if isinstance(node.get("$ref"), str) else []) + [
            ref for value in node.values() for ref in _refs(value)]
    if isinstance(node, list):
        return [ref for item in node for ref in _refs(item)]
    return []


def test_every_ref_in_openapi_resolves_to_a_defined_component(client):
    document = client.get("/openapi.json").json()
    refs = set(_refs(document))
    assert "#/components/schemas/CapsuleIn" in refs and "#/components/schemas/IngestBatch" in refs
    schemas = document["components"]["schemas"]
    unresolved = {ref for ref in refs
                  if not (ref.startswith("#/components/schemas/") and ref.rsplit("/", 1)[1] in schemas)}
    assert unresolved == set()
    assert "$defs" not in json.dumps(document)


def test_openapi_media_types_and_body_errors_match_the_routes(client):
    paths = client.get("/openapi.json").json()["paths"]
    assert list(paths["/v1/capsules/export"]["get"]["responses"]["200"]["content"]) == ["application/x-ndjson"]
    import_op = paths["/v1/capsules/import"]["post"]
    assert list(import_op["requestBody"]["content"]) == ["application/x-ndjson"]
    assert "in one transaction" not in import_op["description"] and "chunks of 5000" in import_op["description"]
    for path, method in [("/v1/capsules", "post"), ("/v1/capsules/import", "post"), ("/v1/capsules/get", "post"),
                         ("/v1/capsules/relate", "post"), ("/v1/capsules/tombstone", "post"),
                         ("/v1/capsules/{capsule_id}", "patch"), ("/v1/memory_bootstrap", "post")]:
        assert {"400", "413", "415"} <= set(paths[path][method]["responses"]), (method, path)
    # and the service really answers them on a body-reading route the table did not list 400 for before
    assert client.post("/v1/capsules/get", content=b"{oops", headers={"content-type": "application/json"}).status_code == 400
    assert client.post("/v1/capsules/get", content=b"{}", headers={"content-type": "text/plain"}).status_code == 415


def test_export_import_round_trips_unicode_line_separators(db):
    # U+2028/U+2029/U+0085 stay raw inside the export's JSON strings; import splits on "\n" only.
    client = TestClient(create_app(GraphService(db, clock=fixed_clock(NOW))))
    text = "a\u2028b\u2029c\u0085d"
    assert client.post("/v1/capsules", json={"project_id": "p", "kind": "fact", "content": text}).status_code == 201
    exported = client.get("/v1/capsules/export")
    wipe(db)
    imported = client.post("/v1/capsules/import", content=exported.content,
                           headers={"content-type": "application/x-ndjson"})
    assert imported.status_code == 201, imported.text
    assert client.post("/v1/capsules/get", json={"ids": ["cap-1"]}).json()["capsules"][0]["content"] == text
    assert client.get("/v1/capsules/export").content == exported.content


@pytest.mark.parametrize("body", [b"[" * 100_000 + b"]" * 100_000, b'{"token_budget": ' + b"9" * 5000 + b"}"])
def test_json_the_parser_cannot_hold_is_a_400_not_a_500(db, body):
    client = TestClient(create_app(GraphService(db, clock=fixed_clock(NOW))))
    response = client.post("/v1/memory_bootstrap", content=body, headers={"content-type": "application/json"})
    assert response.status_code == 400
    assert response.json()["error"]["code"] == "bad_request"


@pytest.mark.parametrize("media_type", ["text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x"])
def test_browser_simple_content_types_are_refused_before_any_write(db, media_type):
    # A cross-site page can send these without a CORS preflight; the service must not act on them.
    client = TestClient(create_app(GraphService(db, clock=fixed_clock(NOW))))
    body = b'{"project_id": "p", "kind": "fact", "content": "x"}'
    response = client.post("/v1/capsules", content=body, headers={"content-type": media_type})
    assert response.status_code == 415
    assert response.json()["error"]["field"] == "content-type"
    assert db._driver.execute_query("MATCH (c:Capsule) RETURN count(c) AS n").records[0]["n"] == 0


def test_a_body_over_the_limit_is_413(db, monkeypatch):
    from graphsvc.surfaces.http import common

    monkeypatch.setattr(common, "MAX_JSON_BYTES", 64)
    client = TestClient(create_app(GraphService(db, clock=fixed_clock(NOW))))
    response = client.post("/v1/capsules", json={"project_id": "p", "kind": "fact", "content": "x" * 100})
    assert response.status_code == 413


@pytest.mark.parametrize("valid_to", ["9999-12-31T23:59:59-05:00", "0001-01-01T00:00:00+01:00"])
def test_a_valid_to_that_leaves_the_date_range_in_utc_is_a_422_not_a_500(client, db, valid_to):
    # Both are valid ISO datetimes, but converting them to UTC lands in year 10000 / year 0.
    error = error_of(client.post("/v1/capsules", json={"items": [
        {"project_id": "p", "kind": "fact", "content": "ok"},
        {"project_id": "p", "kind": "fact", "content": "x", "valid_to": valid_to}]}), 422)
    assert error["field"] == "items[1].valid_to" and "outside the supported date range" in error["message"]
    assert db._driver.execute_query("MATCH (c:Capsule) RETURN count(c) AS n").records[0]["n"] == 0

    assert client.post("/v1/capsules", json={"project_id": "p", "kind": "fact", "content": "x"}).status_code == 201
    error = error_of(client.patch("/v1/capsules/cap-1", json={"valid_to": valid_to}), 422)
    assert error["field"] == "valid_to" and "outside the supported date range" in error["message"]
    assert client.get("/v1/capsules/cap-1").json().get("valid_to") is None


def test_a_lone_surrogate_escape_in_json_is_refused_before_any_write(client, db):
    # "\ud800" is legal JSON and json.loads keeps it, but no UTF-8 (so no Neo4j string) can hold it.
    body = b'{"items": [{"project_id": "p", "kind": "fact", "content": "ok"},' \
           b' {"project_id": "p", "kind": "fact", "content": "x", "headline": "h\\ud800"}]}'
    response = client.post("/v1/capsules", content=body, headers={"content-type": "application/json"})
    error = error_of(response, 422)
    assert error["field"] == "items[1].headline" and "no lone surrogates" in error["message"]
    assert db._driver.execute_query("MATCH (c:Capsule) RETURN count(c) AS n").records[0]["n"] == 0
    response = client.post("/v1/memory_bootstrap", content=b'{"terms": ["\\udc00x"], "project_prefix": "p\\ud800"}',
                           headers={"content-type": "application/json"})
    assert error_of(response, 400)["field"] in ("terms[0]", "project_prefix")


def test_a_wrong_method_is_a_405_with_allow(db):
    client = TestClient(create_app(GraphService(db, clock=fixed_clock(NOW))))
    response = client.delete("/v1/capsules/relate")
    assert response.status_code == 405
    assert response.json()["error"]["code"] == "method_not_allowed"
    assert "POST" in response.headers["allow"]
