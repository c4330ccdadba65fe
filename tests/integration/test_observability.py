"""Request ids, logs, /metrics and the tidy edges (issue 12), against a real Neo4j.

In-process apps (TestClient / LiveServer) for the behaviour of each piece, and one real
`graphsvc serve` subprocess for what only the command sets up: uvicorn's access log off,
the JSON log format, and Prometheus multiprocess mode.
"""

from __future__ import annotations

import io
import json
import logging
import os
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Iterator

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families
from starlette.requests import Request
from starlette.routing import Route
from starlette.testclient import TestClient

from graphsvc.logs import JsonFormatter, RequestIdFilter, TEXT_FORMAT
from graphsvc.service import GraphService
from graphsvc.store.db import Database
from graphsvc.surfaces.http.app import create_app

from .live_server import LiveServer, free_port, started_client

GRAPHSVC = Path(sys.executable).with_name("graphsvc")
HEX32 = re.compile(r"^[0-9a-f]{32}$")
FACT = {"project_id": "p", "kind": "fact", "content": "x"}


def metric(text: str, name: str, **labels: str) -> float:
    """The value of one sample in an exposition text (0 when absent)."""
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name == name and all(sample.labels.get(k) == v for k, v in labels.items()):
                return sample.value
    return 0.0


@pytest.fixture
def client(db) -> Iterator[TestClient]:
    async def boom(request: Request) -> None:
        raise RuntimeError("a bug")

    app = create_app(GraphService(db), extra_routes=[Route("/boom", boom)])
    with started_client(app, raise_server_exceptions=False) as http:
        yield http


# ---------------------------------------------------------------- request ids


def test_a_safe_request_id_is_echoed_and_anything_else_replaced(client):
    assert client.get("/healthz", headers={"X-Request-ID": "trace-42.a:b_c"}).headers["x-request-id"] == "trace-42.a:b_c"
    assert HEX32.match(client.get("/healthz").headers["x-request-id"])
    for hostile in ("x" * 129, "new\\nline", "a b", "<script>", ""):
        answered = client.get("/healthz", headers={"X-Request-ID": hostile}).headers["x-request-id"]
        assert HEX32.match(answered), hostile
    first, second = client.get("/healthz"), client.get("/healthz")
    assert first.headers["x-request-id"] != second.headers["x-request-id"]


@pytest.mark.parametrize("method, path, kwargs, status", [
    ("get", "/v1/capsules/cap-9", {}, 404),
    ("get", "/no/such/route", {}, 404),
    ("delete", "/v1/capsules/relate", {}, 405),
    ("post", "/v1/capsules", {"content": b"{oops", "headers": {"content-type": "application/json"}}, 400),
    ("post", "/v1/capsules", {"json": {"project_id": "p"}}, 422),
    ("post", "/v1/capsules", {"content": b"{}", "headers": {"content-type": "text/plain"}}, 415),
    ("get", "/boom", {}, 500),
])
def test_every_error_body_carries_the_request_id_of_its_header(client, method, path, kwargs, status):
    headers = {**kwargs.pop("headers", {}), "X-Request-ID": f"req-{status}"}
    response = client.request(method, path, headers=headers, **kwargs)
    assert response.status_code == status
    assert response.headers["x-request-id"] == f"req-{status}"
    assert response.json()["error"]["request_id"] == f"req-{status}"


def test_401_and_503_carry_the_request_id_too(db):
    with started_client(create_app(GraphService(db), api_token="tok")) as http:
        response = http.get("/readyz", headers={"X-Request-ID": "r-401"})
        assert response.status_code == 401 and response.json()["error"]["request_id"] == "r-401"
        assert response.headers["x-request-id"] == "r-401"
    down = Database("bolt://127.0.0.1:1", "neo4j", "irrelevant", timeout=1.0)
    try:
        with TestClient(create_app(GraphService(down))) as http:
            response = http.post("/v1/capsules", json=FACT, headers={"X-Request-ID": "r-503"})
            assert response.status_code == 503 and response.json()["error"]["request_id"] == "r-503"
    finally:
        down.close()


@pytest.fixture
def log_lines() -> Iterator[io.StringIO]:
    """Capture what the service's log handler would write, JSON-formatted (the filter is the real one)."""
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.addFilter(RequestIdFilter())
    handler.setFormatter(JsonFormatter())
    root = logging.getLogger()
    old_level = root.level
    root.addHandler(handler)
    root.setLevel(logging.INFO)
    try:
        yield stream
    finally:
        root.removeHandler(handler)
        root.setLevel(old_level)


def test_every_log_line_of_a_request_carries_its_id(client, log_lines):
    client.get("/boom", headers={"X-Request-ID": "r-boom"})  # an access line and the logged traceback
    client.post("/v1/capsules", json=FACT, headers={"X-Request-ID": "r-ok"})
    entries = [json.loads(line) for line in log_lines.getvalue().splitlines()]
    entries = [e for e in entries if not e["logger"].startswith("httpx")]  # the test's own client
    boom = [e for e in entries if e["request_id"] == "r-boom"]
    assert {e["logger"] for e in boom} >= {"graphsvc.surfaces.http.app", "graphsvc.access"}
    assert any("RuntimeError: a bug" in e.get("exception", "") for e in boom)
    access = [e for e in entries if e["logger"] == "graphsvc.access"]
    assert [(e["request_id"], e["http"]["status"]) for e in access] == [("r-boom", 500), ("r-ok", 201)]
    assert access[1]["http"]["method"] == "POST" and access[1]["http"]["target"] == "/v1/capsules"
    assert all(set(e) >= {"ts", "level", "logger", "message", "request_id"} for e in entries)


def test_the_access_line_never_prints_query_values(client, log_lines):
    client.get("/v1/capsules?access_token=SECRET-VALUE&kind=fact&limit=5")
    client.get("/v1/capsules/%0aforged%20line?x=SECRET-VALUE")
    entries = [json.loads(line) for line in log_lines.getvalue().splitlines()]
    served = [e for e in entries if not e["logger"].startswith("httpx")]  # the test's own client logs its URL
    assert served and "SECRET-VALUE" not in json.dumps(served)
    targets = [e["http"]["target"] for e in served if e["logger"] == "graphsvc.access"]
    assert targets == ["/v1/capsules?access_token=***&kind=***&limit=***", "/v1/capsules/%0aforged%20line?x=***"]


def test_the_text_format_puts_the_request_id_on_each_line():
    record = logging.LogRecord("graphsvc.x", logging.INFO, __file__, 1, "hello %s", ("there",), None)
    RequestIdFilter().filter(record)
    assert logging.Formatter(TEXT_FORMAT).format(record).endswith("INFO graphsvc.x [-]: hello there")


# ---------------------------------------------------------------- metrics


def test_metrics_count_requests_per_route_template_and_status(client, db):
    before = client.get("/metrics").text
    client.post("/v1/capsules", json={"items": [FACT, FACT]})
    for capsule_id in ("cap-1", "cap-2", "cap-77"):
        client.get(f"/v1/capsules/{capsule_id}")
    client.get("/v1/capsules/cap-1'%20OR%201=1%20//")
    response = client.get("/metrics")
    assert response.status_code == 200 and response.headers["content-type"].startswith("text/plain")
    after = response.text
    route = "/v1/capsules/{capsule_id}"

    def delta(name: str, **labels: str) -> float:
        return metric(after, name, **labels) - metric(before, name, **labels)

    assert delta("graphsvc_http_requests_total", method="GET", route=route, status="200") == 2
    assert delta("graphsvc_http_requests_total", method="GET", route=route, status="404") == 1
    assert delta("graphsvc_http_requests_total", method="GET", route="<unmatched>", status="404") == 1
    assert delta("graphsvc_http_requests_total", method="POST", route="/v1/capsules", status="201") == 1
    assert delta("graphsvc_http_request_duration_seconds_count", method="GET", route=route, status="200") == 2
    assert "cap-77" not in after and "OR 1=1" not in after  # raw paths never become labels
    assert "graphsvc_neo4j_work_in_flight" in after and "graphsvc_http_requests_in_flight" in after


def test_metrics_count_packs_by_ready_state_and_trimmed_rows(client):
    before = client.get("/metrics").text
    client.post("/v1/memory_bootstrap", json={})
    client.post("/v1/capsules", json={"items": [{"project_id": "p", "kind": "decision", "content": f"decision {i} " * 20}
                                                for i in range(6)] + [{"project_id": "p", "kind": "task", "content": "t"}]})
    pack = client.post("/v1/memory_bootstrap", json={"token_budget": 200}).json()
    empty = client.post("/v1/memory_bootstrap", json={"token_budget": 0}).json()
    after = client.get("/metrics").text
    assert pack["budget"]["trimmed_by_budget"] > 0
    for state, expected in (("nothing_ready", 1), ("next_action", 1), ("empty", 1)):
        got = metric(after, "graphsvc_packs_total", ready_state=state) - metric(before, "graphsvc_packs_total",
                                                                                 ready_state=state)
        assert got == expected, state
    trimmed = metric(after, "graphsvc_pack_rows_trimmed_total") - metric(before, "graphsvc_pack_rows_trimmed_total")
    assert trimmed == pack["budget"]["trimmed_by_budget"] + empty["budget"]["trimmed_by_budget"]


def test_metrics_count_neo4j_errors_and_503s(client):
    before = client.get("/metrics").text
    down = Database("bolt://127.0.0.1:1", "neo4j", "irrelevant", timeout=1.0)
    try:
        with TestClient(create_app(GraphService(down))) as http:
            assert http.post("/v1/capsules", json=FACT).status_code == 503
    finally:
        down.close()
    after = client.get("/metrics").text
    assert metric(after, "graphsvc_unavailable_total", surface="http") - metric(
        before, "graphsvc_unavailable_total", surface="http") == 1
    errors = sum(s.value for f in text_string_to_metric_families(after) for s in f.samples
                 if s.name == "graphsvc_neo4j_errors_total")
    errors_before = sum(s.value for f in text_string_to_metric_families(before) for s in f.samples
                        if s.name == "graphsvc_neo4j_errors_total")
    assert errors > errors_before


def test_metrics_are_behind_the_api_token_or_the_metrics_token(db):
    with started_client(create_app(GraphService(db), api_token="api")) as http:
        assert http.get("/metrics").status_code == 401
        assert http.get("/metrics", headers={"Authorization": "Bearer api"}).status_code == 200
    with started_client(create_app(GraphService(db), api_token="api", metrics_token="scrape")) as http:
        assert http.get("/metrics", headers={"Authorization": "Bearer scrape"}).status_code == 200
        refused = http.get("/metrics", headers={"Authorization": "Bearer api"})
        assert refused.status_code == 401 and refused.json()["error"]["code"] == "unauthorized"
        assert http.get("/readyz", headers={"Authorization": "Bearer scrape"}).status_code == 401
    with started_client(create_app(GraphService(db), metrics_token="scrape")) as http:
        assert http.get("/metrics").status_code == 401
        assert http.get("/metrics", headers={"Authorization": "Bearer scrape"}).status_code == 200


# ---------------------------------------------------------------- tidy edges


@pytest.mark.parametrize("path", [
    "/v1/capsules/cap-1'%20OR%201=1%20//", "/v1/capsules/", "/healthz/", "/v1/capsules/cap-1/", "//", "/v1//capsules",
])
def test_an_unknown_path_is_a_json_404_never_a_redirect(db, path):
    with LiveServer(create_app(GraphService(db))) as server:
        response = httpx.get(server.url + path, follow_redirects=False)
    assert response.status_code == 404, (path, response.headers.get("location"))
    error = response.json()["error"]
    assert error["code"] == "not_found" and error["request_id"] == response.headers["x-request-id"]


def test_an_oversized_body_is_a_json_413_on_the_api_and_on_mcp(db, monkeypatch):
    from graphsvc.surfaces.http import common

    monkeypatch.setattr(common, "MAX_JSON_BYTES", 64)
    mcp_headers = {"content-type": "application/json", "accept": "application/json, text/event-stream"}
    with LiveServer(create_app(GraphService(db))) as server:
        api = httpx.post(server.url + "/v1/capsules", json={**FACT, "content": "x" * 100})
        chunked = httpx.post(server.url + "/v1/capsules", content=iter([b'{"content": "', b"x" * 100, b'"}']),
                             headers={"content-type": "application/json"})
        mcp = httpx.post(server.url + "/mcp", content=b" " * (4 * 1024 * 1024 + 1), headers=mcp_headers)
    for response in (api, chunked, mcp):
        assert response.status_code == 413
        assert response.headers["content-type"] == "application/json"
        error = response.json()["error"]
        assert error["code"] == "payload_too_large" and error["message"]
        assert error["request_id"] == response.headers["x-request-id"]


# ---------------------------------------------------------------- graphsvc serve


@pytest.fixture
def served(neo4j_target, tmp_path) -> Iterator[tuple[str, Path, subprocess.Popen]]:
    """`graphsvc serve` as an operator runs it: auth on, JSON logs, Prometheus multiprocess mode."""
    port = free_port()
    multiproc = tmp_path / "prom"
    multiproc.mkdir()
    log_path = tmp_path / "serve.log"
    env = {**os.environ, "NEO4J_URI": neo4j_target.uri, "NEO4J_USER": neo4j_target.user,
           "NEO4J_PASSWORD": neo4j_target.password, "GRAPHSVC_NEO4J_TIMEOUT": "30", "GRAPHSVC_PORT": str(port),
           "GRAPHSVC_API_TOKEN": "tok-serve", "GRAPHSVC_LOG_FORMAT": "json", "GRAPHSVC_LOG_LEVEL": "info",
           "PROMETHEUS_MULTIPROC_DIR": str(multiproc)}
    with open(log_path, "wb") as log_file:
        process = subprocess.Popen([str(GRAPHSVC), "serve"], env=env, stdout=log_file, stderr=subprocess.STDOUT)
        url = f"http://127.0.0.1:{port}"
        try:
            deadline = time.monotonic() + 60
            while True:
                try:
                    # Ready, not only up: the schema and warm-up run in the background after start.
                    if httpx.get(url + "/readyz", headers={"Authorization": "Bearer tok-serve"}).status_code == 200:
                        break
                except httpx.HTTPError:
                    pass
                assert process.poll() is None and time.monotonic() < deadline, log_path.read_text()
                time.sleep(0.2)
            yield url, log_path, process
        finally:
            process.terminate()
            process.wait(timeout=20)


def test_serve_logs_json_with_request_ids_never_a_query_value_and_serves_multiprocess_metrics(served, db):
    url, log_path, process = served
    multiproc = log_path.parent / "prom"
    auth = {"Authorization": "Bearer tok-serve"}
    assert httpx.get(url + "/readyz?access_token=LEAKED-TOKEN").status_code == 401
    assert httpx.post(url + "/v1/capsules", json=FACT, headers={**auth, "X-Request-ID": "serve-1"}).status_code == 201
    metrics = httpx.get(url + "/metrics", headers=auth)
    assert metrics.status_code == 200
    assert metric(metrics.text, "graphsvc_http_requests_total", method="GET", route="/readyz", status="401") == 1
    assert metric(metrics.text, "graphsvc_http_requests_total", method="POST", route="/v1/capsules", status="201") == 1
    assert "process_cpu_seconds_total" not in metrics.text  # the multiprocess collector, not this process's registry
    time.sleep(0.5)
    text = log_path.read_text()
    assert "LEAKED-TOKEN" not in text
    entries = [json.loads(line) for line in text.splitlines() if line.strip()]  # every line is one JSON object
    access = [e for e in entries if e["logger"] == "graphsvc.access"]
    assert "/readyz?access_token=***" in [e["http"]["target"] for e in access]
    assert any(e["request_id"] == "serve-1" and e["http"]["status"] == 201 for e in access)
    assert not any(e["logger"] == "uvicorn.access" for e in entries)
    assert any(e["logger"].startswith("uvicorn") for e in entries)  # uvicorn's own lines share the format
    assert any(multiproc.glob("gauge_livesum_*.db"))
    process.terminate()
    process.wait(timeout=20)
    assert not any(multiproc.glob("gauge_livesum_*.db"))  # a stopped worker's in-flight gauges are gone
    assert any(multiproc.glob("counter_*.db"))  # its counts stay in the totals
