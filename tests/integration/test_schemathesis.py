"""Property-based fuzzing of every route in /openapi.json: no input may produce a 5xx.

Schemathesis reads the service's own OpenAPI document (so new routes are covered as soon as they
are declared) and generates valid and invalid requests for each operation, with a fixed seed and
a bounded example count so the run is reproducible and takes a few minutes. Requests go over real
HTTP to a real uvicorn server (lifespan on, so /mcp is live) backed by the test Neo4j.

Only the "not a server error" check is asserted here: a 4xx for a strange request is the service
doing its job; a 5xx is a bug (or, for 503, Neo4j being unreachable, which it must not be here).
"""

from __future__ import annotations

from typing import Iterator

import httpx
import pytest
import schemathesis
from hypothesis import HealthCheck, seed, settings
from schemathesis.checks import not_a_server_error

from graphsvc.clock import system_clock
from graphsvc.surfaces.http.app import all_operations, create_app
from graphsvc.surfaces.http.openapi import build_document
from graphsvc.service import GraphService

from ..conftest import wipe
from .live_server import LiveServer

SEED = 20261202
EXAMPLES_PER_OPERATION = 200  # x ~14 operations (some have few distinct inputs) -> >= 2,000 requests
MIN_REQUESTS = 2000

sent: dict[str, int] = {}
server_errors: list[str] = []


@pytest.fixture(scope="module")
def live_url(database) -> Iterator[str]:
    wipe(database)
    with LiveServer(create_app(GraphService(database, clock=system_clock))) as server:
        yield server.url


# The document the app serves, built from the same route table at import time (schemathesis'
# fixture-based lazy loading does not run under pytest 9); the first test proves the two agree.
schema = schemathesis.openapi.from_dict(build_document(all_operations()))


def test_the_fuzzed_document_is_the_served_openapi_json(live_url):
    assert httpx.get(f"{live_url}/openapi.json").json() == build_document(all_operations())


@schema.parametrize()
@seed(SEED)
@settings(
    max_examples=EXAMPLES_PER_OPERATION,
    deadline=None,
    database=None,
    suppress_health_check=list(HealthCheck),
)
def test_no_input_produces_a_server_error(case, live_url):
    response = case.call(base_url=live_url, timeout=30)
    key = f"{case.method} {case.path}"
    sent[key] = sent.get(key, 0) + 1
    if response.status_code >= 500:
        server_errors.append(f"{key} -> {response.status_code}")
    case.validate_response(response, checks=[not_a_server_error])


def test_the_fuzzing_sent_enough_requests():
    """Runs after the fuzzing above (file order); proves it was not a handful of requests."""
    if not sent:
        pytest.skip("the schemathesis tests were deselected in this run")
    total = sum(sent.values())
    fuzzed = {key: count for key, count in sorted(sent.items()) if count > 1}
    print(f"\n[schemathesis] {total} requests, {len(server_errors)} server errors; "
          + ", ".join(f"{key}={count}" for key, count in fuzzed.items())
          + f"; plus {total - sum(fuzzed.values())} single probes (undeclared methods and the like)")
    assert total >= MIN_REQUESTS
    assert server_errors == []
