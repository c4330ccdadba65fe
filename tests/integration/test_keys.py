"""Issue 27: API keys in Neo4j, their cache and revocation, and what a scoped key sees (real Neo4j)."""

from __future__ import annotations

import json
import subprocess
import sys
import os
from datetime import timedelta

import httpx
import pytest

from graphsvc.access import Forbidden
from graphsvc.clock import fixed_clock
from graphsvc.errors import InvalidInput, NotFound, Unauthorized
from graphsvc.keyring import KeyRing
from graphsvc.service import GraphService
from graphsvc.surfaces.http.app import create_app

from .bootstrap_support import NOW, Store, ids
from .keys_support import acting_as, bearer, make_key, scoped
from .live_server import LiveServer


class Ticks:
    """A monotonic clock the test moves."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_a_key_is_stored_hashed_listed_without_secrets_and_checked(db):
    service = GraphService(db, clock=fixed_clock(NOW))
    created = make_key(service, "write", "shop", "shop/api", "billing", label="billing-agent")
    key_id, secret = created["id"], created["key"].split("_")[2]
    assert created["prefixes"] == ["billing", "shop"]  # shop/api lies inside shop
    stored = db._driver.execute_query("MATCH (k:ApiKey) RETURN properties(k) AS p").records[0]["p"]
    assert secret not in json.dumps(stored, default=str) and stored["secret_hash"] and stored["salt"]
    listed = service.keys_list()["keys"]
    assert [k["id"] for k in listed] == [key_id] and "secret_hash" not in listed[0] and "salt" not in listed[0]
    assert listed[0]["revoked"] is False and listed[0]["last_used_at"] is None
    ring = KeyRing(db, fixed_clock(NOW))
    principal = ring.authenticate(created["key"].encode(), None)
    assert (principal.key_id, principal.right, principal.prefixes) == (key_id, "write", ("billing", "shop"))
    assert principal.caller == f"key:{key_id}"
    assert service.keys_list()["keys"][0]["last_used_at"] is not None  # recorded on first use
    with pytest.raises(Unauthorized):
        ring.authenticate(created["key"][:-1].encode() + (b"0" if created["key"][-1] != "0" else b"1"), None)


def test_revocation_holds_once_the_one_second_cache_has_expired(db):
    service = GraphService(db, clock=fixed_clock(NOW))
    created = make_key(service, "read")
    ticks = Ticks()
    ring = KeyRing(db, fixed_clock(NOW), monotonic=ticks)
    token = created["key"].encode()
    assert ring.authenticate(token, None).key_id == created["id"]
    assert service.keys_revoke(created["id"])["revoked"] is True
    assert service.keys_revoke(created["id"])["revoked_at"] == service.keys_list()["keys"][0]["revoked_at"]
    ticks.now += 0.5
    assert ring.cached(token, None) is not None  # within the second: the cached answer stands
    ticks.now += 0.5
    assert ring.cached(token, None) is None  # the cache entry is stale: Neo4j is asked again
    with pytest.raises(Unauthorized) as refused:
        ring.authenticate(token, None)
    assert "revoked" in refused.value.message
    with pytest.raises(NotFound):
        service.keys_revoke("0123456789ab")
    with pytest.raises(InvalidInput):
        service.keys_revoke("gsk_nope")


def test_last_used_at_is_written_at_most_once_a_minute_per_key(db):
    service = GraphService(db, clock=fixed_clock(NOW))
    created = make_key(service, "read")
    ticks = Ticks()
    writes = []
    ring = KeyRing(db, fixed_clock(NOW), monotonic=ticks)
    original = db.write
    db.write = lambda work: writes.append(1) or original(work)  # count the writes the ring makes
    try:
        for _ in range(50):
            ring.authenticate(created["key"].encode(), None)
            ticks.now += 0.5  # 25 s of requests: the lookups repeat, the touch does not
        assert len(writes) == 1
        ticks.now += 60
        ring.authenticate(created["key"].encode(), None)
        assert len(writes) == 2
    finally:
        db.write = original


def test_key_creation_is_validated(db):
    service = GraphService(db)
    for body, field in [({"label": "x", "rights": "root"}, "rights"), ({"rights": "read"}, "label"),
                        ({"label": "x", "rights": "read", "prefixes": ["shop/"]}, "prefixes[0]"),
                        ({"label": "x", "rights": "read", "prefixes": []}, "prefixes")]:
        with pytest.raises(InvalidInput) as refused:
            service.keys_create(body)
        assert refused.value.field == field, refused.value.message
    # an admin key covers the whole store: no prefixes (export, import and key management cannot be fenced)
    with pytest.raises(InvalidInput) as refused:
        service.keys_create({"label": "x", "rights": "admin", "prefixes": ["shop"]})
    assert "whole store" in refused.value.message


def test_an_admin_operation_needs_a_key_over_the_whole_store(db):
    # A key stored with admin and prefixes (by hand in Browser, or before the rule) still cannot
    # export, import or manage keys: none of them can be fenced.
    service = GraphService(db, clock=fixed_clock(NOW))
    with acting_as(scoped("admin", "shop")):
        for call in (lambda: list(service.export_lines()), lambda: service.import_lines(["{}"]),
                     lambda: service.keys_list(), lambda: service.keys_create({"label": "x", "rights": "admin"})):
            with pytest.raises(Forbidden) as refused:
                call()
            assert "may" in refused.value.message


def test_the_cli_creates_lists_and_revokes_keys(db, neo4j_target):
    env = {**os.environ, "NEO4J_URI": neo4j_target.uri, "NEO4J_USER": neo4j_target.user,
           "NEO4J_PASSWORD": neo4j_target.password}
    cli = [sys.executable, "-m", "graphsvc", "keys"]
    made = subprocess.run(cli + ["create", "--label", "billing-agent", "--prefix", "billing", "--rights", "write"],
                          env=env, capture_output=True, text=True, timeout=120)
    assert made.returncode == 0, made.stderr
    key = made.stdout.strip()
    record = json.loads(made.stderr.strip().splitlines()[-1])
    assert key.startswith(f"gsk_{record['id']}_") and record["prefixes"] == ["billing"]
    listed = subprocess.run(cli + ["list"], env=env, capture_output=True, text=True, timeout=120)
    assert key.split("_")[2] not in listed.stdout and json.loads(listed.stdout)["label"] == "billing-agent"
    revoked = subprocess.run(cli + ["revoke", record["id"]], env=env, capture_output=True, text=True, timeout=120)
    assert revoked.returncode == 0 and json.loads(revoked.stdout)["revoked"] is True
    unknown = subprocess.run(cli + ["revoke", "0123456789ab"], env=env, capture_output=True, text=True, timeout=120)
    assert unknown.returncode == 2 and "no API key" in unknown.stderr


# -------------------------------------------------------------------- what a scoped key sees


def test_a_scoped_pack_is_fenced_to_the_scope_and_a_fence_outside_is_refused(db):
    s = Store(db)
    s.put("constraint", "Shop rule", project_id="shop")
    s.put("constraint", "Shop api rule", project_id="shop/api")
    s.put("constraint", "Shopx rule", project_id="shopx")
    s.put("constraint", "Billing rule", project_id="billing")
    with acting_as(scoped("read", "shop")):
        pack = s.pack()
        assert pack["constraints_total"] == 2 and pack["scope"] == {"key_prefixes": ["shop"]}
        assert sorted(r["headline"] for r in pack["constraints"]) == ["Shop api rule", "Shop rule"]
        narrowed = s.pack(project_id="shop/api")
        assert [r["headline"] for r in narrowed["constraints"]] == ["Shop api rule"]
        with pytest.raises(Forbidden) as refused:
            s.pack(project_prefix="shopx")
        assert "'shop'" in refused.value.message and refused.value.field == "project_prefix"
    # one prefix, no fence: the same sections as the whole-store key fenced to that prefix
    with acting_as(scoped("read", "shop")):
        keyed = s.pack(terms=["rule"])
    fenced = s.pack(terms=["rule"], project_prefix="shop")
    assert {k: v for k, v in keyed.items() if k != "scope"} == {k: v for k, v in fenced.items() if k != "scope"}


def test_a_multi_prefix_pack_is_the_union_with_one_ready_set_and_one_cycle_rule(db):
    s = Store(db)
    a = s.put("task", "Task in a", project_id="a")
    b = s.put("task", "Task in b", project_id="b/x", age_days=5)
    c = s.put("task", "Task in c", project_id="c")
    s.put("decision", "Decision in ab", project_id="ab")
    with acting_as(scoped("read", "a", "b")):
        pack = s.pack()
    assert pack["ready_total"] == 2 and ids([pack["ready"]["next_action"]]) == [b]  # fresher first
    assert ids(pack["ready"]["ready"]) == [a] and "decisions" not in pack
    # a cycle across the two subtrees is one cycle of the union: the pack fails closed
    s.block(a, b)
    s.block(b, a)
    with acting_as(scoped("read", "a", "b")):
        cycled = s.pack()
    assert cycled["ready"]["cycle"] == sorted([a, b], key=lambda i: int(i[4:])) and cycled["ready_total"] == 0
    # ... which neither single-prefix key sees (its fence holds half the cycle; a blocker outside still blocks)
    with acting_as(scoped("read", "a")):
        alone = s.pack()
    assert "cycle" not in alone["ready"] and alone["ready_total"] == 0 and b not in json.dumps(alone)
    # c is blocked from outside the key's scope: not ready, and its blocker's id never shown
    s.block(a, c)
    with acting_as(scoped("read", "c")):
        blocked = s.pack()
    assert blocked["ready_total"] == 0 and a not in json.dumps(blocked) and "Task in a" not in json.dumps(blocked)


def test_get_hides_out_of_scope_capsules_and_counts_their_edges(db):
    s = Store(db)
    inside = s.put("task", "Inside", project_id="shop")
    outside = s.put("task", "Outside", project_id="shopx")
    s.block(outside, inside)
    service = s.at(NOW)
    with acting_as(scoped("read", "shop")):
        got = service.get([inside])["capsules"][0]
        assert got["edges"] == {"out": [], "in": [], "hidden": {"out": 0, "in": 1}}
        with pytest.raises(NotFound) as hidden:
            service.get([outside])
        with pytest.raises(NotFound) as unknown:
            service.get(["cap-999"])
        assert hidden.value.message.replace(outside, "ID") == unknown.value.message.replace("cap-999", "ID")
        page = service.list({})
        assert ids(page["capsules"]) == [inside] and outside not in json.dumps(page)
        with pytest.raises(Forbidden):
            service.list({"project_id": "shopx"})
    assert service.get([inside])["capsules"][0]["edges"]["in"] == [{"type": "BLOCKS", "from": outside}]


def test_writes_outside_the_scope_are_refused_and_write_nothing(db):
    s = Store(db)
    mine = s.put("task", "Mine", project_id="shop")
    theirs = s.put("task", "Theirs", project_id="other")
    service = s.at(NOW)
    before = db._driver.execute_query("MATCH (c:Capsule) RETURN count(c) AS n").records[0]["n"]
    with acting_as(scoped("write", "shop")):
        with pytest.raises(Forbidden) as refused:
            service.ingest({"items": [{"project_id": "shop", "kind": "fact", "content": "ok"},
                                      {"project_id": "other", "kind": "fact", "content": "no"}]})
        assert refused.value.field == "items[1].project_id"
        with pytest.raises(InvalidInput) as unknown_ref:  # exactly as an unknown id would be
            service.ingest({"project_id": "shop", "kind": "task", "content": "x", "blocked_by": [theirs]})
        assert unknown_ref.value.message == f"{theirs} does not exist; edges can only point at stored capsules"
        with pytest.raises(InvalidInput) as relate_out:
            service.relate({"add": [{"type": "BLOCKS", "from": theirs, "to": mine}]})
        assert relate_out.value.field == "add[0].from"
        with pytest.raises(NotFound):
            service.update(theirs, {"status": "done"})
        with pytest.raises(NotFound):
            service.tombstone([mine, theirs])
        with pytest.raises(Forbidden):
            service.export_lines()
    with acting_as(scoped("read", "shop")):
        with pytest.raises(Forbidden) as read_only:
            service.update(mine, {"status": "done"})
        assert "'read'" in read_only.value.message
    after = db._driver.execute_query("MATCH (c:Capsule) RETURN count(c) AS n").records[0]["n"]
    assert after == before
    state = service.get([mine, theirs])["capsules"]
    assert [c["status"] for c in state] == ["open", "open"] and not any(c["tombstoned"] for c in state)


def test_idempotency_keys_are_scoped_per_api_key(db):
    service = GraphService(db, clock=fixed_clock(NOW))
    first, second = make_key(service, "write", "shop"), make_key(service, "write", "shop")
    body = {"project_id": "shop", "kind": "fact", "content": "once"}
    with LiveServer(create_app(service, require_keys=True)) as live, httpx.Client(base_url=live.url, timeout=30) as http:
        one = http.post("/v1/capsules", json=body, headers={**bearer(first["key"]), "Idempotency-Key": "k1"})
        again = http.post("/v1/capsules", json=body, headers={**bearer(first["key"]), "Idempotency-Key": "k1"})
        other = http.post("/v1/capsules", json=body, headers={**bearer(second["key"]), "Idempotency-Key": "k1"})
    assert one.status_code == again.status_code == other.status_code == 201
    assert again.json() == one.json() and again.headers.get("idempotent-replayed") == "true"
    assert other.json() != one.json()  # another key's k1 is another write


def test_writes_record_the_key_that_wrote_them_and_export_import_keep_it(db, caplog):
    import logging

    caplog.set_level(logging.INFO, logger="graphsvc.access")  # the line is written after the answer is sent
    service = GraphService(db, clock=fixed_clock(NOW))
    writer, editor = make_key(service, "write", "shop", label="writer-agent"), make_key(service, "write", label="editor")
    with LiveServer(create_app(service, require_keys=True)) as live, httpx.Client(base_url=live.url, timeout=30) as http:
        made = http.post("/v1/capsules", json={"project_id": "shop", "kind": "task", "content": "Do it"},
                         headers=bearer(writer["key"]))
        capsule_id = made.json()["ids"][0]
        got = http.get(f"/v1/capsules/{capsule_id}", headers=bearer(writer["key"])).json()
        assert (got["written_by"], got["written_by_label"]) == (writer["id"], "writer-agent")
        changed = http.patch(f"/v1/capsules/{capsule_id}", json={"status": "done"}, headers=bearer(editor["key"])).json()
        assert (changed["written_by"], changed["written_by_label"]) == (editor["id"], "editor")
    lines = [r.getMessage() for r in caplog.records if r.name == "graphsvc.access"]
    assert any(line.startswith("POST /v1/capsules 201") and f"key={writer['id']}" in line for line in lines), lines
    assert not any(writer["key"].split("_")[2] in line for line in lines)
    exported = list(service.export_lines())
    assert json.loads(exported[0])["capsule"]["written_by"] == editor["id"]
    db.wipe_all()
    service.import_lines(exported)
    assert list(service.export_lines()) == exported
    # importing the same file again (a resumed import) finds every capsule, written_by included, present
    again = service.import_lines(exported)
    assert again["capsules"] == 0 and again["already_present"]["capsules"] == len(exported) - sum(
        1 for line in exported if not line.startswith('{"capsule"'))


def test_scoped_tool_results_match_the_advertised_output_schemas(db):
    """MCP clients validate structuredContent against each tool's outputSchema: a scoped key's pack
    (key_prefixes), a get with hidden edges and provenance, and a refusal must all pass."""
    import jsonschema

    from graphsvc.surfaces.mcp import TOOLS, call_tool

    s = Store(db)
    inside = s.put("task", "Inside", project_id="shop")
    outside = s.put("task", "Outside", project_id="other")
    s.block(outside, inside)
    service = s.at(NOW)
    schemas = {spec.name: spec.to_tool().output_schema for spec in TOOLS}
    writer = scoped("write", "shop", "billing")
    with acting_as(writer):
        results = [("memory_bootstrap", call_tool(service, "memory_bootstrap", {})),
                   ("memory_update", call_tool(service, "memory_update", {"id": inside, "tier": "stale"})),
                   ("memory_get", call_tool(service, "memory_get", {"ids": [inside]})),
                   ("memory_list", call_tool(service, "memory_list", {})),
                   ("memory_ingest", call_tool(service, "memory_ingest", {"items": [{"project_id": "other",
                                                                                    "kind": "fact", "content": "x"}]}))]
    for name, result in results:
        jsonschema.validate(result.structured_content, schemas[name])
    pack, _, got, _, refused = (result.structured_content for _, result in results)
    assert pack["scope"] == {"key_prefixes": ["billing", "shop"]}
    capsule = got["capsules"][0]
    assert capsule["edges"]["hidden"] == {"out": 0, "in": 1} and capsule["written_by"] == writer.key_id
    assert refused["error"]["code"] == "forbidden" and "'billing', 'shop'" in refused["error"]["message"]


def test_one_fence_reads_refuse_any_fence_value_outside_the_scope(db):
    # The alias listing reads the aliases of every prefix enclosing its fence: each fence value sent
    # must lie in the key's scope, not just one of them.
    service = GraphService(db, clock=fixed_clock(NOW))
    service.alias({"term": "postgres", "aliases": ["pg"], "project_prefix": "other"})
    with acting_as(scoped("read", "shop/api")):
        for call in (lambda: service.aliases({"project_id": "shop/api", "project_prefix": "other"}),
                     lambda: service.retrieve({"terms": ["pg"], "project_id": "shop/api", "project_prefix": "other"}),
                     lambda: service.digest({"project_id": "shop/api", "project_prefix": "other"})):
            with pytest.raises(Forbidden) as refused:
                call()
            assert refused.value.field == "project_prefix"
        assert service.aliases({"project_id": "shop/api"}) == {"aliases": []}
