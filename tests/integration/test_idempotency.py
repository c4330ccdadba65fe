"""Idempotency keys (SPEC §5) on every write, over HTTP and MCP, against a real Neo4j.

What must hold: a retry with the same key and body returns the first answer (same ids, same
status) and writes nothing; another body is a 422; a malformed key a 400; keys expire after
the TTL and are scoped to the caller's token; two racing requests with one key write once;
a write whose response was lost is stored once when retried; and no capsule read, export or
pack ever sees a key.
"""

from __future__ import annotations

import hashlib
import json
import socket
import threading
import time
from datetime import datetime, timedelta, timezone
from typing import Any

import anyio
import httpx
import pytest
from mcp import Client
from starlette.testclient import TestClient

from graphsvc.clock import fixed_clock
from graphsvc.service import GraphService
from graphsvc.store.idempotency import PURGE_BATCH, purge_expired
from graphsvc.surfaces.http.app import create_app

from .live_server import LiveServer, started_client

NOW = datetime(2026, 12, 1, 12, 0, tzinfo=timezone.utc)
FACT = {"project_id": "p", "kind": "fact", "content": "the fact"}


class Clock:
    """A clock the test moves (the service reads it once per request)."""

    def __init__(self, now: datetime):
        self.now = now

    def __call__(self) -> datetime:
        return self.now


def count(db, query: str) -> int:
    return db._driver.execute_query(query).records[0][0]


def capsules(db) -> int:
    return count(db, "MATCH (c:Capsule) RETURN count(c)")


def counter(db) -> int:
    rows = db._driver.execute_query("MATCH (k:IdCounter {name: 'capsule'}) RETURN k.value").records
    return rows[0][0] if rows else 0


def keys(db) -> list[dict[str, Any]]:
    return [dict(r["k"]) for r in db._driver.execute_query("MATCH (k:IdempotencyKey) RETURN k ORDER BY k.key").records]


@pytest.fixture
def clock() -> Clock:
    return Clock(NOW)


@pytest.fixture
def client(db, clock):
    with started_client(create_app(GraphService(db, clock=clock))) as http:
        yield http


def keyed(key: str) -> dict[str, str]:
    return {"Idempotency-Key": key}


def test_a_retried_ingest_returns_the_first_ids_and_writes_nothing(client, db):
    first = client.post("/v1/capsules", json={"items": [FACT, FACT]}, headers=keyed("k-1"))
    assert first.status_code == 201 and first.json() == {"ids": ["cap-1", "cap-2"]}
    assert "idempotent-replayed" not in first.headers
    for _ in range(3):
        again = client.post("/v1/capsules", json={"items": [FACT, FACT]}, headers=keyed("k-1"))
        assert again.status_code == 201 and again.content == first.content
        assert again.headers["idempotent-replayed"] == "true"
        # the retrying caller lost the first answer: the replay still hands it a bookmark to read its write
        assert again.headers["graphsvc-bookmark"].startswith("v1.")
    assert capsules(db) == 2 and counter(db) == 2  # not even an id was burnt by the retries
    # key order and whitespace are not part of the request: the canonical body is
    same = client.post("/v1/capsules", content=b'{"items": [{"content": "the fact", "kind": "fact", "project_id": "p"},'
                       b' {"project_id":"p","content":"the fact","kind":"fact"}]}',
                       headers={**keyed("k-1"), "content-type": "application/json"})
    assert same.status_code == 201 and same.json() == {"ids": ["cap-1", "cap-2"]}
    # without a key (or with a new one) the same body is a new write, as before
    assert client.post("/v1/capsules", json={"items": [FACT, FACT]}).json() == {"ids": ["cap-3", "cap-4"]}
    assert client.post("/v1/capsules", json={"items": [FACT, FACT]}, headers=keyed("k-2")).json() == {
        "ids": ["cap-5", "cap-6"]}


def test_the_same_key_with_another_body_is_a_422_that_says_so(client, db):
    assert client.post("/v1/capsules", json=FACT, headers=keyed("k-1")).status_code == 201
    response = client.post("/v1/capsules", json={**FACT, "content": "another"}, headers=keyed("k-1"))
    assert response.status_code == 422
    error = response.json()["error"]
    assert error["code"] == "idempotency_key_reused" and error["field"] == "Idempotency-Key"
    assert "different request" in error["message"] and "new key" in error["message"]
    # another operation with the same key is another request too
    response = client.post("/v1/capsules/tombstone", json={"ids": ["cap-1"]}, headers=keyed("k-1"))
    assert response.status_code == 422 and response.json()["error"]["code"] == "idempotency_key_reused"
    assert capsules(db) == 1 and client.get("/v1/capsules/cap-1").json()["tombstoned"] is False


@pytest.mark.parametrize("key", ["", "has space", "x" * 201, "semi;colon", "ünï", "quote\"d"])
def test_a_malformed_key_is_a_teaching_400_before_anything_is_written(client, db, key):
    response = client.post("/v1/capsules", json=FACT, headers=[(b"Idempotency-Key", key.encode("utf-8"))])
    assert response.status_code == 400
    error = response.json()["error"]
    assert error["field"] == "Idempotency-Key" and "1 to 200 characters" in error["message"]
    assert capsules(db) == 0


def test_a_repeated_key_header_is_a_400(client, db):
    response = client.post("/v1/capsules", json=FACT, headers=[("Idempotency-Key", "a"), ("Idempotency-Key", "b")])
    assert response.status_code == 400 and "send it once" in response.json()["error"]["message"]
    assert capsules(db) == 0


def test_relate_update_tombstone_and_import_replay_their_first_answer(client, db):
    client.post("/v1/capsules", json={"items": [{"project_id": "p", "kind": "task", "content": t} for t in "ab"]})
    calls = [
        ("post", "/v1/capsules/relate", {"add": [{"type": "BLOCKS", "from": "cap-1", "to": "cap-2"}]}),
        ("patch", "/v1/capsules/cap-1", {"content": "a, rewritten"}),
        ("post", "/v1/capsules/tombstone", {"ids": ["cap-2"]}),
    ]
    for index, (method, path, body) in enumerate(calls):
        first = client.request(method, path, json=body, headers=keyed(f"w-{index}"))
        assert first.status_code == 200, first.text
        again = client.request(method, path, json=body, headers=keyed(f"w-{index}"))
        assert (again.status_code, again.json()) == (200, first.json()), path
        assert again.headers["idempotent-replayed"] == "true"
        assert client.request(method, path, json=body, headers=keyed(f"other-{index}")).status_code == 200
    # the replayed relate still says "added 1" (the first answer), tombstone "tombstoned"
    assert client.post("/v1/capsules/relate", json=calls[0][2], headers=keyed("w-0")).json()["added"] == 1
    assert client.post("/v1/capsules/tombstone", json={"ids": ["cap-2"]}, headers=keyed("w-2")).json() == {
        "tombstoned": ["cap-2"], "already_tombstoned": []}
    # PATCH: the id is part of the request, so the same key on another capsule is refused
    response = client.patch("/v1/capsules/cap-2", json={"content": "a, rewritten"}, headers=keyed("w-1"))
    assert response.status_code == 422

    exported = client.get("/v1/capsules/export").content
    db.wipe_all()
    ndjson = {"content-type": "application/x-ndjson", **keyed("imp-1")}
    first = client.post("/v1/capsules/import", content=exported, headers=ndjson)
    assert first.status_code == 201 and first.json() == {"capsules": 2, "edges": 1, "already_present": {"capsules": 0, "edges": 0}}
    again = client.post("/v1/capsules/import", content=exported, headers=ndjson)  # would be a 409 without the key
    assert (again.status_code, again.json(), again.headers["idempotent-replayed"]) == (201, first.json(), "true")
    assert capsules(db) == 2
    other = client.post("/v1/capsules/import", content=exported + b"\n", headers=ndjson)
    assert other.status_code == 422 and other.json()["error"]["code"] == "idempotency_key_reused"
    # the same file under another key, or none: everything is already present, nothing is written
    twin = client.post("/v1/capsules/import", content=exported, headers={**ndjson, **keyed("imp-2")})
    assert twin.status_code == 201 and twin.json()["already_present"] == {"capsules": 2, "edges": 1}
    unkeyed = client.post("/v1/capsules/import", content=exported, headers={"content-type": "application/x-ndjson"})
    assert unkeyed.status_code == 201 and unkeyed.json()["capsules"] == 0
    # an id stored with other fields: a 409 that says how to get the answer of a twin
    changed = exported.replace(b'"content":"a', b'"content":"A', 1)
    assert changed != exported
    refused = client.post("/v1/capsules/import", content=changed, headers={**ndjson, **keyed("imp-3")})
    assert refused.status_code == 409 and refused.json()["error"]["field"] == "line[1].capsule.id"
    assert "Idempotency-Key 'imp-3': if another import under this key is still running" in refused.json()["error"]["message"]
    assert capsules(db) == 2


def test_a_refused_write_does_not_use_up_its_key(client, db):
    bad = {**FACT, "supersedes": ["cap-9"]}
    assert client.post("/v1/capsules", json=bad, headers=keyed("k-1")).status_code == 422
    assert keys(db) == []
    client.post("/v1/capsules", json={"items": [FACT] * 9})
    # the same key and body now succeed: the first attempt wrote (and stored) nothing
    response = client.post("/v1/capsules", json=bad, headers=keyed("k-1"))
    assert response.status_code == 201 and response.json() == {"ids": ["cap-10"]}


def test_keys_expire_after_the_ttl_and_are_purged_in_bounded_batches(db):
    clock = Clock(NOW)
    http = TestClient(create_app(GraphService(db, clock=clock, idempotency_ttl=timedelta(hours=24))))
    assert http.post("/v1/capsules", json=FACT, headers=keyed("k-1")).json() == {"ids": ["cap-1"]}
    clock.now = NOW + timedelta(hours=23, minutes=59)
    assert http.post("/v1/capsules", json=FACT, headers=keyed("k-1")).json() == {"ids": ["cap-1"]}
    [stored] = keys(db)
    assert stored["expires_at"].to_native() == NOW + timedelta(hours=24)
    clock.now = NOW + timedelta(hours=24)  # expired: the key names nothing any more
    response = http.post("/v1/capsules", json={**FACT, "content": "new"}, headers=keyed("k-1"))
    assert response.status_code == 201 and response.json() == {"ids": ["cap-2"]}

    db._driver.execute_query("UNWIND range(1, $n) AS i CREATE (:IdempotencyKey {caller: '', key: 'old-' + i, "
                             "expires_at: $at})", n=PURGE_BATCH + 50, at=NOW)
    clock.now = NOW + timedelta(hours=30)
    http.post("/v1/capsules", json=FACT, headers=keyed("k-2"))
    remaining = count(db, "MATCH (k:IdempotencyKey) WHERE k.key STARTS WITH 'old-' RETURN count(k)")
    assert remaining == 50  # one keyed write purges at most PURGE_BATCH expired keys
    http.post("/v1/capsules", json=FACT, headers=keyed("k-3"))
    assert count(db, "MATCH (k:IdempotencyKey) WHERE k.key STARTS WITH 'old-' RETURN count(k)") == 0


def test_a_purge_keeps_a_key_that_a_concurrent_write_is_re_recording(db):
    # An expired key is being reused: the write holds its lock and gives it a new expiry while a
    # purge that read the old one waits. Deleting it then would lose the new write's stored result,
    # and a retry of that write would run again.
    db._driver.execute_query("CREATE (:IdempotencyKey {caller: '', key: 'k', expires_at: $at})", at=NOW)
    purged: list[int] = []
    with db._driver.session() as session:
        tx = session.begin_transaction()
        tx.run("MATCH (k:IdempotencyKey {caller: '', key: 'k'}) SET k.expires_at = $later",
               later=NOW + timedelta(hours=48)).consume()
        purger = threading.Thread(target=lambda: purged.append(purge_expired(db, NOW + timedelta(hours=1))))
        purger.start()
        deadline = time.monotonic() + 30
        while not any(row["status"].startswith("Blocked") for row in db._driver.execute_query(
                "SHOW TRANSACTIONS YIELD currentQuery, status WHERE currentQuery CONTAINS 'DELETE k' "
                "RETURN status").records):
            assert time.monotonic() < deadline, "the purge never waited for the key's lock"
            time.sleep(0.05)
        tx.commit()
        purger.join(timeout=30)

    assert purged == [0]
    assert count(db, "MATCH (k:IdempotencyKey {key: 'k'}) RETURN count(k)") == 1


def test_keys_are_scoped_to_the_token_and_only_its_hash_is_stored(db):
    token_a, token_b = "token-A-SECRET", "token-B-SECRET"
    app_a = TestClient(create_app(GraphService(db, clock=fixed_clock(NOW)), api_token=token_a))
    app_b = TestClient(create_app(GraphService(db, clock=fixed_clock(NOW)), api_token=token_b))
    first = app_a.post("/v1/capsules", json=FACT, headers={**keyed("shared"), "Authorization": f"Bearer {token_a}"})
    other = app_b.post("/v1/capsules", json={**FACT, "content": "b"},
                       headers={**keyed("shared"), "Authorization": f"Bearer {token_b}"})
    assert (first.json(), other.json()) == ({"ids": ["cap-1"]}, {"ids": ["cap-2"]})  # no 422 across tokens
    stored = keys(db)
    assert sorted(k["caller"] for k in stored) == sorted(hashlib.sha256(t.encode()).hexdigest() for t in (token_a, token_b))
    dump = json.dumps(stored, default=str)
    assert token_a not in dump and token_b not in dump


def test_keys_are_invisible_to_capsule_reads_export_and_the_pack(client, db):
    body = {"items": [{"project_id": "p", "kind": "task", "content": "do it"}, FACT]}
    client.post("/v1/capsules", json=body, headers=keyed("k-1"))
    client.post("/v1/capsules/relate", json={"add": [{"type": "SUPERSEDES", "from": "cap-2", "to": "cap-1"}]},
                headers=keyed("k-2"))
    assert count(db, "MATCH (k:IdempotencyKey) RETURN count(k)") == 2
    exported = client.get("/v1/capsules/export").text.splitlines()
    assert [next(iter(json.loads(line))) for line in exported] == ["capsule", "capsule", "edge"]
    assert "IdempotencyKey" not in client.get("/v1/capsules/export").text and "k-1" not in "".join(exported)
    assert [c["id"] for c in client.get("/v1/capsules").json()["capsules"]] == ["cap-1", "cap-2"]
    pack = client.post("/v1/memory_bootstrap", json={}).json()
    assert "k-1" not in json.dumps(pack) and pack["ready_total"] == 0  # cap-1 is superseded
    # the Browser's inspect queries match :Capsule only
    from graphsvc.store import cypher

    records = db._driver.execute_query(cypher.load("inspect/project_graph"), project_prefix=None).records
    assert {r["c"]["id"] for r in records} == {"cap-1", "cap-2"}


def _race(url: str, n: int, key: str, body: dict[str, Any]) -> list[httpx.Response]:
    barrier = threading.Barrier(n)
    responses: list[httpx.Response] = []
    lock = threading.Lock()

    def one() -> None:
        with httpx.Client(base_url=url, timeout=60) as http:
            barrier.wait()
            response = http.post("/v1/capsules", json=body, headers=keyed(key))
        with lock:
            responses.append(response)

    threads = [threading.Thread(target=one) for _ in range(n)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return responses


def test_requests_racing_with_one_key_write_once(db):
    with LiveServer(create_app(GraphService(db))) as server:
        for round_ in range(5):
            responses = _race(server.url, 8, f"race-{round_}", {"items": [FACT, FACT, FACT]})
            assert {r.status_code for r in responses} == {201}
            assert len({r.content for r in responses}) == 1  # every racer got the winner's ids
            assert sum(1 for r in responses if r.headers.get("idempotent-replayed") == "true") == 7
    assert capsules(db) == 15 and counter(db) == 15  # 5 rounds x 3 capsules, not 5 x 8 x 3


def _post_and_vanish(port: int, body: bytes, key: str | None) -> None:
    """Send a keyed POST and close the socket without reading a byte of the answer."""
    head = (f"POST /v1/capsules HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\ncontent-type: application/json\r\n"
            f"content-length: {len(body)}\r\n" + (f"Idempotency-Key: {key}\r\n" if key else "") + "\r\n")
    with socket.create_connection(("127.0.0.1", port)) as sock:
        sock.sendall(head.encode("ascii") + body)
        sock.shutdown(socket.SHUT_WR)


def _wait_for(db, expected: int) -> None:
    deadline = time.monotonic() + 30
    while capsules(db) < expected:
        assert time.monotonic() < deadline, f"the write never committed ({capsules(db)} of {expected})"
        time.sleep(0.02)


def test_a_write_whose_response_was_lost_is_stored_once_when_retried(db, capsys):
    """Fault: the write commits, the client dies before reading the answer, the client retries."""
    trials = 10
    body = json.dumps({"items": [FACT, FACT]}).encode()
    with LiveServer(create_app(GraphService(db))) as server, httpx.Client(base_url=server.url) as http:
        for trial in range(trials):
            _post_and_vanish(server.port, body, f"lost-{trial}")
            _wait_for(db, 2 * (trial + 1))  # committed, answer never read
            retry = http.post("/v1/capsules", content=body,
                              headers={**keyed(f"lost-{trial}"), "content-type": "application/json"})
            assert retry.status_code == 201 and retry.headers["idempotent-replayed"] == "true"
            assert retry.json() == {"ids": [f"cap-{2 * trial + 1}", f"cap-{2 * trial + 2}"]}
        with_key = capsules(db)
        db.wipe_all()
        for trial in range(trials):  # the same fault without a key: the retry stores a second copy
            _post_and_vanish(server.port, body, None)
            _wait_for(db, 4 * trial + 2)
            assert http.post("/v1/capsules", content=body, headers={"content-type": "application/json"}).status_code == 201
        without_key = capsules(db)
    assert with_key == 2 * trials and without_key == 4 * trials
    with capsys.disabled():
        print(f"\n[lost-response retry] {trials} trials x 2 capsules: with Idempotency-Key {with_key} stored "
              f"(expected {2 * trials}), without a key {without_key} stored (duplicates: {without_key - 2 * trials})")


def test_mcp_write_tools_take_an_idempotency_key(db):
    async def scenario(url: str) -> list[Any]:
        async with Client(f"{url}/mcp") as client:
            tools = {tool.name: tool for tool in (await client.list_tools()).tools}
            results = [
                await client.call_tool("memory_ingest", {"items": [FACT], "idempotency_key": "m-1"}),
                await client.call_tool("memory_ingest", {"items": [FACT], "idempotency_key": "m-1"}),
                await client.call_tool("memory_ingest", {**FACT, "idempotency_key": "m-2"}),
                await client.call_tool("memory_ingest", {"items": [FACT, FACT], "idempotency_key": "m-1"}),
                await client.call_tool("memory_update", {"id": "cap-1", "tier": "stale", "idempotency_key": "m-3"}),
                await client.call_tool("memory_update", {"id": "cap-1", "tier": "stale", "idempotency_key": "m-3"}),
                await client.call_tool("memory_tombstone", {"ids": ["cap-2"], "idempotency_key": "bad key"}),
            ]
            return [tools, *results]

    with LiveServer(create_app(GraphService(db))) as server:
        tools, first, retry, single, reused, update, update_again, bad = anyio.run(scenario, server.url)
    for name in ("memory_ingest", "memory_relate", "memory_update", "memory_tombstone"):
        assert "idempotency_key" in tools[name].input_schema["properties"], name
    item = tools["memory_ingest"].input_schema["properties"]["items"]["items"]
    assert "idempotency_key" not in item["properties"]  # not on each batch item
    assert "idempotency_key" not in tools["memory_get"].input_schema["properties"]
    # Every write result carries a bookmark, the replay too (one that covers the stored write).
    assert first.structured_content.pop("bookmark") and retry.structured_content.pop("bookmark")
    assert first.structured_content == retry.structured_content == {"ids": ["cap-1"]}
    assert single.structured_content.pop("bookmark")
    assert single.structured_content == {"ids": ["cap-2"]}
    assert reused.is_error and reused.structured_content["error"]["code"] == "idempotency_key_reused"
    assert reused.structured_content["error"]["field"] == "idempotency_key"
    assert reused.structured_content["error"]["request_id"]  # MCP over HTTP: the HTTP request's id
    assert update.structured_content.pop("bookmark") and update_again.structured_content.pop("bookmark")
    assert update.structured_content == update_again.structured_content
    assert bad.is_error and bad.structured_content["error"]["code"] == "bad_request"
    assert capsules(db) == 2 and counter(db) == 2
