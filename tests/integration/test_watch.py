"""ETags and watches over HTTP (SPEC §13) on a real Neo4j and a real uvicorn server.

- bootstrap, digest and retrieve answer with a strong ETag that ignores the clock; If-None-Match
  holding it gets 304 with no body;
- a watch answers a different pack at once, waits while nothing in its fence changes (computing
  no pack: counted), wakes for a write in its fence (also one that names another project but
  changes this one's pack), for a `valid_to` the clock passes, and answers 304 after wait_s;
- a client that goes away ends its watch; bad etag / wait_s are 422, pack fields keep their 400.
"""

from __future__ import annotations

import threading
import time
from datetime import datetime, timedelta, timezone
from typing import Any, Iterator

import httpx
import pytest
from prometheus_client import REGISTRY

from graphsvc.clock import fixed_clock, system_clock
from graphsvc.service import GraphService
from graphsvc.surfaces.http.app import all_operations, create_app
from graphsvc.surfaces.http.openapi import build_document

from .live_server import LiveServer


def packs_computed(pack: str = "bootstrap") -> float:
    return REGISTRY.get_sample_value("graphsvc_watch_packs_total", {"pack": pack}) or 0.0


def polls() -> float:
    return REGISTRY.get_sample_value("graphsvc_watch_polls_total") or 0.0


class World:
    def __init__(self, db: Any, server: LiveServer, service: GraphService):
        self.db, self.server, self.service = db, server, service
        self.http = httpx.Client(base_url=server.url, timeout=90)

    def put(self, project_id: str, kind: str, content: str, **fields: Any) -> str:
        return self.service.ingest({"project_id": project_id, "kind": kind, "content": content, **fields})["ids"][0]

    def later(self, seconds: float, action: Any) -> threading.Thread:
        thread = threading.Thread(target=lambda: (time.sleep(seconds), action()), daemon=True)
        thread.start()
        return thread

    def watch(self, pack: str = "bootstrap", **body: Any) -> tuple[httpx.Response, float]:
        started = time.monotonic()
        answer = self.http.post(f"/v1/memory_{pack}/watch", json=body)
        return answer, time.monotonic() - started

    def etag(self, pack: str = "bootstrap", **body: Any) -> str:
        return self.http.post(f"/v1/memory_{pack}", json=body).headers["etag"]


@pytest.fixture
def world(db) -> Iterator[World]:
    service = GraphService(db, clock=system_clock)
    app = create_app(service)
    with LiveServer(app) as server:
        world = World(db, server, service)
        world.app = app  # type: ignore[attr-defined]
        yield world
        world.http.close()


# -- ETag / If-None-Match ------------------------------------------------------------------------

@pytest.mark.parametrize("route, body", [
    ("/v1/memory_bootstrap", {"project_id": "shop"}),
    ("/v1/memory_digest", {"project_id": "shop"}),
    ("/v1/memory_retrieve", {"project_id": "shop", "terms": ["checkout"]}),
])
def test_packs_carry_a_strong_etag_and_if_none_match_gets_an_empty_304(world, route, body):
    world.put("shop", "task", "Fix the checkout flow")
    first = world.http.post(route, json=body)
    tag = first.headers["etag"]
    assert first.status_code == 200 and tag.startswith('"') and not tag.startswith("W/")
    for header in (tag, "W/" + tag, f'"stale", {tag}', "*"):
        again = world.http.post(route, json=body, headers={"If-None-Match": header})
        assert again.status_code == 304, header
        assert again.content == b"" and again.headers["etag"] == tag
    stale = world.http.post(route, json=body, headers={"If-None-Match": '"stale"'})
    assert stale.status_code == 200 and stale.headers["etag"] == tag
    assert {**stale.json(), "as_of": None} == {**first.json(), "as_of": None}
    world.put("shop", "fact", "The checkout flow uses the payments API")
    world.put("shop", "task", "Checkout: another task")
    changed = world.http.post(route, json=body, headers={"If-None-Match": tag})
    assert changed.status_code == 200 and changed.headers["etag"] != tag


def test_the_etag_ignores_the_clock_only(db):
    world_at = [datetime(2026, 12, 6, 10, 0, tzinfo=timezone.utc), datetime(2026, 12, 6, 11, 30, tzinfo=timezone.utc)]
    GraphService(db, clock=fixed_clock(world_at[0] - timedelta(days=1))).ingest(
        {"project_id": "shop", "kind": "constraint", "content": "Never ship on Friday"})
    bodies, tags = [], []
    for when in world_at:
        with LiveServer(create_app(GraphService(db, clock=fixed_clock(when)))) as server:
            answer = httpx.post(f"{server.url}/v1/memory_bootstrap", json={"project_id": "shop"}, timeout=30)
            bodies.append(answer.content)
            tags.append(answer.headers["etag"])
    assert bodies[0] != bodies[1] and tags[0] == tags[1]  # only as_of differs


def test_openapi_documents_the_etag_the_304_and_the_watch_routes(world):
    document = world.http.get("/openapi.json").json()
    assert document == build_document(all_operations())
    for path in ("/v1/memory_bootstrap", "/v1/memory_digest", "/v1/memory_retrieve",
                 "/v1/memory_bootstrap/watch", "/v1/memory_digest/watch"):
        operation = document["paths"][path]["post"]
        assert "ETag" in operation["responses"]["200"]["headers"], path
        assert "ETag" in operation["responses"]["304"]["headers"], path
        conditional = any(p["name"] == "If-None-Match" for p in operation.get("parameters", []))
        assert conditional == (not path.endswith("/watch")), path
    watch = document["paths"]["/v1/memory_bootstrap/watch"]["post"]
    schema = watch["requestBody"]["content"]["application/json"]["schema"]
    assert {"etag", "wait_s", "project_id", "terms"} <= set(schema["properties"])
    assert "422" in watch["responses"]


# -- watch ---------------------------------------------------------------------------------------

def test_a_watch_without_etag_or_with_a_stale_one_answers_the_current_pack_at_once(world):
    world.put("shop", "task", "Task one")
    current = world.http.post("/v1/memory_bootstrap", json={"project_id": "shop"})
    for body in ({"project_id": "shop"}, {"project_id": "shop", "etag": '"stale"'}):
        answer, took = world.watch(wait_s=30, **body)
        assert answer.status_code == 200 and took < 10
        assert answer.headers["etag"] == current.headers["etag"]
        assert answer.json()["ready"] == current.json()["ready"]


def test_an_idle_watch_costs_no_pack_and_answers_304_when_wait_s_passes(world):
    world.put("shop", "task", "Task one")
    tag = world.etag(project_id="shop")
    computed, polled = packs_computed(), polls()
    # Writes elsewhere while it waits: they move other projects' markers, never this watcher.
    writer = world.later(0.5, lambda: [world.put("billing", "task", f"Elsewhere {n}") for n in range(3)])
    answer, took = world.watch(project_id="shop", etag=tag, wait_s=3)
    writer.join()
    assert answer.status_code == 304 and answer.content == b"" and answer.headers["etag"] == tag
    assert 3 <= took < 8
    assert packs_computed() - computed == 1  # the one that found the pack unchanged when the watch began
    assert polls() - polled >= 3  # the poller ran meanwhile: the count above is not for want of polling


@pytest.mark.parametrize("pack", ["bootstrap", "digest"])
def test_a_write_in_scope_wakes_the_watch_with_the_new_pack(world, pack):
    world.put("shop", "task", "Task one")
    tag = world.etag(pack, project_prefix="shop")
    world.later(1.0, lambda: world.put("shop/api", "constraint", "Never log card numbers"))
    answer, took = world.watch(pack, project_prefix="shop", etag=tag, wait_s=30)
    assert answer.status_code == 200 and 1.0 <= took < 6
    assert answer.headers["etag"] == world.etag(pack, project_prefix="shop") != tag
    assert "Never log card numbers" in answer.text


def test_a_write_naming_another_project_wakes_the_watch_whose_pack_it_changes(world):
    blocker = world.put("billing", "task", "Billing blocker")
    world.put("shop", "task", "Blocked shop task", blocked_by=[blocker])
    tag = world.etag(project_id="shop")
    world.later(1.0, lambda: world.service.update(blocker, {"status": "done"}))
    answer, took = world.watch(project_id="shop", etag=tag, wait_s=30)
    assert answer.status_code == 200 and took < 6
    assert answer.json()["ready"]["next_action"]["headline"] == "Blocked shop task"


def test_a_valid_to_that_the_clock_passes_wakes_the_watch_without_any_write(world):
    world.put("shop", "task", "Task one")
    expires = datetime.now(timezone.utc) + timedelta(seconds=3)
    world.put("shop", "constraint", "Freeze until the release", valid_to=expires.isoformat())
    tag = world.etag(project_id="shop")
    answer, _ = world.watch(project_id="shop", etag=tag, wait_s=30)
    arrived = datetime.now(timezone.utc)
    assert answer.status_code == 200 and expires <= arrived < expires + timedelta(seconds=4)
    assert "Freeze until the release" not in answer.text


def test_a_claim_wakes_the_watch_and_so_does_its_lease_running_out(world):
    """SPEC §12-§13: a claim changes the pack of every other agent (the task leaves their ready set),
    so it wakes their watches like a write; its lease running out changes the pack back with no
    write at all, and the watch wakes at that instant."""
    world.put("shop", "task", "Leased task")
    tag = world.etag(project_id="shop")
    world.later(1.0, lambda: world.service.claim({"agent": "agent-a", "project_id": "shop", "lease_s": 10}))
    answer, took = world.watch(project_id="shop", etag=tag, wait_s=30)
    assert answer.status_code == 200 and 1.0 <= took < 6
    held = answer.json()["ready"]
    assert held["held_by_others"] == 1 and "next_action" not in held
    leased_until = datetime.now(timezone.utc) + timedelta(seconds=10 - took)
    answer, _ = world.watch(project_id="shop", etag=answer.headers["etag"], wait_s=30)
    arrived = datetime.now(timezone.utc)
    assert answer.status_code == 200 and leased_until - timedelta(seconds=2) <= arrived
    assert answer.json()["ready"]["next_action"]["headline"] == "Leased task"
    assert answer.headers["etag"] == tag  # the same pack as before the claim


def test_a_client_that_goes_away_ends_its_watch(world):
    world.put("shop", "task", "Task one")
    tag = world.etag(project_id="shop")
    feed = world.app.state.changes  # type: ignore[attr-defined]
    with pytest.raises(httpx.ReadTimeout):
        httpx.post(f"{world.server.url}/v1/memory_bootstrap/watch", json={"project_id": "shop", "etag": tag,
                                                                          "wait_s": 60}, timeout=2)
    deadline = time.monotonic() + 5
    while feed.watching and time.monotonic() < deadline:
        time.sleep(0.05)
    assert feed.watching == 0


def test_watch_fields_are_checked_with_teaching_errors(world):
    for body, field in (({"wait_s": 0}, "wait_s"), ({"wait_s": 61}, "wait_s"), ({"wait_s": "10"}, "wait_s"),
                        ({"wait_s": 1.5}, "wait_s"), ({"etag": 7}, "etag"), ({"etag": "x" * 201}, "etag")):
        answer, _ = world.watch(**body)
        assert answer.status_code == 422, body
        assert answer.json()["error"]["field"] == field
    unknown, _ = world.watch(nonsense=1)
    assert unknown.status_code == 400 and "etag" in unknown.text and "wait_s" in unknown.text
    assert world.watch(project_prefix="shop/")[0].status_code == 400  # the pack's own rule, as memory_bootstrap's
    assert world.watch("digest", terms=["x"])[0].status_code == 400


def test_watches_of_one_request_woken_by_one_write_share_one_pack(world):
    world.put("shop", "task", "Task one")
    tag = world.etag(project_id="shop")
    results: list = []

    def watch() -> None:
        results.append(world.watch(project_id="shop", etag=tag, wait_s=30)[0])

    threads = [threading.Thread(target=watch) for _ in range(6)]
    clients_before = packs_computed()
    for thread in threads:
        thread.start()
    time.sleep(2.0)  # all six wait
    started = packs_computed() - clients_before
    world.put("shop", "constraint", "One rule")
    for thread in threads:
        thread.join(30)
    assert [answer.status_code for answer in results] == [200] * 6
    assert len({answer.headers["etag"] for answer in results}) == 1
    assert 1 <= started <= 6 and packs_computed() - clients_before - started == 1


def test_waiting_watches_do_not_use_up_the_in_flight_limit(db):
    service = GraphService(db, clock=system_clock)
    service.ingest({"project_id": "shop", "kind": "task", "content": "Task one"})
    app = create_app(service, max_inflight=1)
    with LiveServer(app) as server, httpx.Client(base_url=server.url, timeout=60) as http:
        tag = http.post("/v1/memory_bootstrap", json={"project_id": "shop"}).headers["etag"]
        results: list = []
        watches = [threading.Thread(target=lambda: results.append(httpx.post(
            f"{server.url}/v1/memory_bootstrap/watch", json={"project_id": "shop", "etag": tag, "wait_s": 4},
            timeout=60).status_code)) for _ in range(3)]
        for thread in watches:
            thread.start()
        deadline = time.monotonic() + 10
        while app.state.changes.watching < 3 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert app.state.changes.watching == 3
        assert http.post("/v1/memory_bootstrap", json={"project_id": "shop"}).status_code == 200  # not shed
        for thread in watches:
            thread.join(30)
        assert results == [304, 304, 304]
