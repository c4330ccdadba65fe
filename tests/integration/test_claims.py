"""Claims (SPEC §12) against a real Neo4j: claim, renew, release, task_id errors, expiry on the injected
clock, the writes that end a lease, the cycle rule, packs and digests that honour leases, the HTTP
routes and the CLI verbs. The race across worker processes is tests/integration/test_claims_race.py;
the oracle comparison with leases is in test_maintained_state.py."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import timedelta

import pytest

from graphsvc.access import Principal, current_principal
from graphsvc.core.canonical import canonical_json
from graphsvc.errors import Conflict, Forbidden, InvalidInput, NotFound
from graphsvc.service import GraphService
from graphsvc.store.idempotency import IdempotencyKey
from graphsvc.surfaces.http.app import create_app
from tests.integration.live_server import started_client
from tests.integration.service_support import NOW


@pytest.fixture
def svc(svc) -> GraphService:
    """p: cap-1..cap-3 ready (cap-1 freshest last: ingest order = decay order ties broken by id), cap-4
    blocked by cap-1, cap-5 a decision; q: cap-6 ready."""
    svc.ingest({"items": [
        {"project_id": "p", "kind": "task", "content": "alpha task"},
        {"project_id": "p", "kind": "task", "content": "beta task"},
        {"project_id": "p", "kind": "epic", "content": "gamma epic"},
    ]})
    svc.ingest({"items": [
        {"project_id": "p", "kind": "task", "content": "delta task", "blocked_by": ["cap-1"]},
        {"project_id": "p", "kind": "decision", "content": "a decision"},
        {"project_id": "q", "kind": "task", "content": "q task"},
    ]})
    return svc


def lease_of(db, capsule_id: str) -> dict:
    record = db._driver.execute_query(
        "MATCH (c:Capsule {id: $id}) RETURN c.lease_agent AS agent, c.lease_until AS until, c.lease_key AS key",
        id=capsule_id).records[0]
    return {"agent": record["agent"], "until": record["until"] and record["until"].to_native(), "key": record["key"]}


def ready_ids(pack: dict) -> list[str]:
    ready = pack["ready"]
    head = [ready["next_action"]["id"]] if "next_action" in ready else []
    return head + [row["id"] for row in ready.get("ready", [])]


def test_claim_takes_the_first_ready_node_of_the_callers_pack_and_claiming_again_renews(svc, db, clock):
    order = ready_ids(svc.bootstrap({"project_id": "p"}))
    assert order == ["cap-1", "cap-2", "cap-3"]
    first = svc.claim({"agent": "a1", "project_id": "p"})
    assert first == {"claimed": {"headline": "alpha task", "id": "cap-1", "lease_until": "2026-12-01T12:15:00.000Z",
                                 "project_id": "p"}, "renewed": False}
    assert lease_of(db, "cap-1") == {"agent": "a1", "until": NOW + timedelta(seconds=900), "key": None}
    # another agent gets the next one; terms reorder the candidates exactly as they reorder the pack
    assert svc.claim({"agent": "a2", "project_id": "p", "terms": ["gamma"]})["claimed"]["id"] == "cap-3"
    clock.now = NOW + timedelta(minutes=10)
    renewed = svc.claim({"agent": "a1", "project_id": "p", "lease_s": 60})
    assert renewed == {"claimed": {"headline": "alpha task", "id": "cap-1", "lease_until": "2026-12-01T12:11:00.000Z",
                                   "project_id": "p"}, "renewed": True}
    assert svc.claim({"agent": "a1", "task_id": "cap-1"})["renewed"] is True
    assert svc.claim({"agent": "a3", "project_id": "p"})["claimed"]["id"] == "cap-2"
    assert svc.claim({"agent": "a4", "project_id": "p"}) == {"claimed": None, "reason": "all_held"}
    assert svc.claim({"agent": "a4", "project_id": "nowhere"}) == {"claimed": None, "reason": "nothing_ready"}
    # the whole store still offers q's task
    assert svc.claim({"agent": "a4"})["claimed"]["id"] == "cap-6"


def test_task_id_errors_name_the_reason(svc, db):
    svc.claim({"agent": "a1", "task_id": "cap-2", "lease_s": 10})
    with pytest.raises(NotFound) as unknown:
        svc.claim({"agent": "a2", "task_id": "cap-99"})
    assert unknown.value.field == "task_id" and "cap-99" in unknown.value.message
    with pytest.raises(NotFound):  # outside the request's fence: as unknown
        svc.claim({"agent": "a2", "task_id": "cap-6", "project_id": "p"})
    with pytest.raises(Conflict) as held:
        svc.claim({"agent": "a2", "task_id": "cap-2"})
    assert held.value.details == [{"reason": "held", "holder": "a1", "lease_until": "2026-12-01T12:00:10.000Z"}]
    assert "a1" in held.value.message and "2026-12-01T12:00:10.000Z" in held.value.message
    with pytest.raises(Conflict) as blocked:
        svc.claim({"agent": "a2", "task_id": "cap-4"})
    assert blocked.value.details == [{"reason": "not_ready"}]
    with pytest.raises(Conflict) as decision:
        svc.claim({"agent": "a2", "task_id": "cap-5"})
    assert decision.value.details == [{"reason": "not_ready"}] and "decision" in decision.value.message
    svc.update("cap-3", {"status": "done"})
    with pytest.raises(Conflict) as done:
        svc.claim({"agent": "a2", "task_id": "cap-3"})
    assert done.value.details == [{"reason": "done"}]
    svc.tombstone(["cap-6"])
    with pytest.raises(NotFound):
        svc.claim({"agent": "a2", "task_id": "cap-6"})
    assert lease_of(db, "cap-4")["agent"] is None  # refused claims write nothing


@pytest.mark.parametrize("body, field", [
    ({"agent": "has space"}, "agent"),
    ({"agent": ""}, "agent"),
    ({"agent": "x" * 101}, "agent"),
    ({"agent": "a", "lease_s": 9}, "lease_s"),
    ({"agent": "a", "lease_s": 86_401}, "lease_s"),
    ({"agent": "a", "lease_s": "60"}, "lease_s"),
    ({"agent": "a", "task_id": "task-1"}, "task_id"),
    ({"agent": "a", "project_prefix": "p/"}, "project_prefix"),
    ({"lease_s": 60}, "agent"),
    ({"agent": "a", "holder": "b"}, "holder"),
])
def test_bad_claims_are_422_naming_the_field_and_write_nothing(svc, db, body, field):
    with pytest.raises(InvalidInput) as refused:
        svc.claim(body)
    assert refused.value.field == field or any(d["field"] == field for d in refused.value.details or []), \
        refused.value.to_body()
    assert all(lease_of(db, f"cap-{n}")["agent"] is None for n in range(1, 7))


def test_release_is_idempotent_and_another_agents_release_is_a_409_naming_the_holder(svc, db):
    svc.claim({"agent": "a1", "task_id": "cap-2"})
    with pytest.raises(Conflict) as foreign:
        svc.release({"agent": "a2", "task_id": "cap-2"})
    assert foreign.value.details == [{"reason": "held", "holder": "a1", "lease_until": "2026-12-01T12:15:00.000Z"}]
    assert lease_of(db, "cap-2")["agent"] == "a1"
    assert svc.release({"agent": "a1", "task_id": "cap-2"}) == {"released": True, "task_id": "cap-2"}
    assert svc.release({"agent": "a1", "task_id": "cap-2"}) == {"released": False, "task_id": "cap-2"}
    assert svc.release({"agent": "a2", "task_id": "cap-2"}) == {"released": False, "task_id": "cap-2"}
    assert lease_of(db, "cap-2") == {"agent": None, "until": None, "key": None}
    with pytest.raises(NotFound):
        svc.release({"agent": "a1", "task_id": "cap-77"})
    assert svc.claim({"agent": "a2", "project_id": "p"})["claimed"]["id"] == "cap-1"


def test_an_expired_lease_is_as_if_absent(svc, db, clock):
    before = canonical_json(svc.bootstrap({"project_id": "p", "agent": "a2"}))
    svc.claim({"agent": "a1", "task_id": "cap-1", "lease_s": 30})
    assert ready_ids(svc.bootstrap({"project_id": "p", "agent": "a2"})) == ["cap-2", "cap-3"]
    clock.now = NOW + timedelta(seconds=30)  # lease_until <= now: expired
    assert canonical_json(svc.bootstrap({"project_id": "p", "agent": "a2"})).replace(
        "2026-12-01T12:00:30Z", "2026-12-01T12:00:00Z") == before
    # a1's expired lease is absent for a2: releasing it is no conflict, and it is a2's to claim
    assert svc.release({"agent": "a2", "task_id": "cap-1"}) == {"released": False, "task_id": "cap-1"}
    assert svc.claim({"agent": "a2", "project_id": "p"}) == {
        "claimed": {"headline": "alpha task", "id": "cap-1", "lease_until": "2026-12-01T12:15:30.000Z",
                    "project_id": "p"}, "renewed": False}
    # the old holder claiming again does not renew: it takes the next free node
    assert svc.claim({"agent": "a1", "project_id": "p"})["claimed"]["id"] == "cap-2"


@pytest.mark.parametrize("end", ["done", "tombstone", "supersede"])
def test_done_tombstone_and_supersede_end_the_lease(svc, db, end):
    svc.claim({"agent": "a1", "task_id": "cap-1"})
    if end == "done":
        svc.update("cap-1", {"status": "done"})
    elif end == "tombstone":
        svc.tombstone(["cap-1"])
    else:
        svc.ingest({"project_id": "p", "kind": "task", "content": "alpha task, again", "supersedes": ["cap-1"]})
    assert lease_of(db, "cap-1") == {"agent": None, "until": None, "key": None}
    # a node that only became blocked keeps its lease (it is just not ready)
    svc.claim({"agent": "a1", "task_id": "cap-2"})
    svc.relate({"add": [{"type": "BLOCKS", "from": "cap-3", "to": "cap-2"}]})
    assert lease_of(db, "cap-2")["agent"] == "a1"
    assert "held_by_others" not in svc.bootstrap({"project_id": "p"})["ready"]


def test_a_live_cycle_fails_closed_whatever_is_held(svc):
    svc.claim({"agent": "a1", "task_id": "cap-2"})
    svc.relate({"add": [{"type": "BLOCKS", "from": "cap-4", "to": "cap-1"}]})  # cap-1 <-> cap-4
    assert svc.claim({"agent": "a2", "project_id": "p"}) == {"claimed": None, "cycle": ["cap-1", "cap-4"],
                                                             "reason": "cycle"}
    ready = svc.bootstrap({"project_id": "p", "agent": "a1"})["ready"]
    assert ready["state"] == "cycle" and ready["cycle"] == ["cap-1", "cap-4"] and "next_action" not in ready


def test_a_task_id_claim_in_a_fence_with_a_live_cycle_answers_the_cycle(svc, db):
    """SPEC §3/§12: a live cycle fails closed whatever is named; the answer names the cycle to repair,
    as a claim without task_id does, and writes nothing. A fence without the cycle claims as usual."""
    svc.claim({"agent": "a1", "task_id": "cap-2"})
    svc.relate({"add": [{"type": "BLOCKS", "from": "cap-4", "to": "cap-1"}]})  # cap-1 <-> cap-4
    cycle = {"claimed": None, "cycle": ["cap-1", "cap-4"], "reason": "cycle"}
    assert svc.claim({"agent": "a2", "task_id": "cap-4", "project_id": "p"}) == cycle  # a node on the cycle
    assert svc.claim({"agent": "a2", "task_id": "cap-1"}) == cycle  # no fence: the whole store holds it
    assert svc.claim({"agent": "a2", "task_id": "cap-3", "project_prefix": "p"}) == cycle  # a ready node beside it
    assert svc.claim({"agent": "a1", "task_id": "cap-2", "project_id": "p"}) == cycle  # no renewal either
    assert [lease_of(db, i)["agent"] for i in ("cap-1", "cap-3", "cap-4")] == [None, None, None]
    assert lease_of(db, "cap-2")["until"] == NOW + timedelta(seconds=900)  # not renewed
    # the cycle lies outside q's fence: q's ready task is claimed
    assert svc.claim({"agent": "a2", "task_id": "cap-6", "project_id": "q"})["claimed"]["id"] == "cap-6"
    svc.relate({"remove": [{"type": "BLOCKS", "from": "cap-4", "to": "cap-1"}]})
    assert svc.claim({"agent": "a2", "task_id": "cap-3"})["claimed"]["id"] == "cap-3"


def test_packs_honour_leases(svc, db, clock):
    plain = svc.bootstrap({"project_id": "p"})
    assert plain["ready_total"] == 3
    svc.claim({"agent": "a1", "task_id": "cap-3"})
    svc.claim({"agent": "a2", "task_id": "cap-1", "lease_s": 60})
    mine = svc.bootstrap({"project_id": "p", "agent": "a1"})
    assert mine["ready"] == {"held_by_others": 1, "state": "next_action",
                             "next_action": {"headline": "gamma epic", "held": {"lease_until": "2026-12-01T12:15:00.000Z"},
                                             "id": "cap-3", "project_id": "p"},
                             "ready": [{"headline": "beta task", "id": "cap-2", "project_id": "p"}]}
    assert mine["ready_total"] == 2 and mine["handles"] == ["cap-3", "cap-2", "cap-5"]
    anonymous = svc.bootstrap({"project_id": "p"})
    assert anonymous["ready"]["held_by_others"] == 2 and ready_ids(anonymous) == ["cap-2"]
    assert anonymous["ready_total"] == 1
    # the whole store and a prefix fence count the same leases; q's task is no one's
    assert svc.bootstrap({"agent": "a9"})["ready"]["held_by_others"] == 2
    assert ready_ids(svc.bootstrap({"agent": "a2"}))[0] == "cap-1"
    # the digest's ready section is the pack's
    digest = svc.digest({"project_id": "p", "agent": "a1"})
    assert digest["ready"] == {key: value for key, value in mine["ready"].items() if key != "ready"} | {
        "ready": mine["ready"]["ready"]} and digest["ready_total"] == 2
    # every ready node held by others: nothing ready, said so
    svc.claim({"agent": "a3", "task_id": "cap-2"})
    taken = svc.bootstrap({"project_id": "p", "agent": "a4"})["ready"]
    assert taken["state"] == "nothing_ready" and taken["held_by_others"] == 3 and "another agent" in taken["message"]
    # budgets still hold with held rows
    for budget in (1, 40, 60, 80, 120, 400):
        pack = svc.bootstrap({"project_id": "p", "agent": "a1", "token_budget": budget})
        assert pack["budget"]["used_tokens"] == -(-len(canonical_json(pack)) // 4)
        assert budget < pack["budget"]["floor_tokens"] or pack["budget"]["used_tokens"] <= budget
    # once every lease has passed, the packs are the ones before any claim, byte for byte
    clock.now = NOW
    svc.release({"agent": "a1", "task_id": "cap-3"})
    clock.now = NOW + timedelta(hours=1)
    later = svc.bootstrap({"project_id": "p"})
    assert canonical_json(later).replace("13:00:00Z", "12:00:00Z") == canonical_json(plain)


def test_claim_and_release_take_idempotency_keys(svc, db):
    key = IdempotencyKey.parse("claim-1", caller="", field="Idempotency-Key")
    first = svc.claim({"agent": "a1", "project_id": "p"}, idempotency=key)
    again = svc.claim({"agent": "a1", "project_id": "p"},
                      idempotency=IdempotencyKey.parse("claim-1", caller="", field="Idempotency-Key"))
    assert again == first and again["renewed"] is False  # replayed, not renewed
    assert svc.claim({"agent": "a1", "project_id": "p"})["renewed"] is True
    released = svc.release({"agent": "a1", "task_id": "cap-1"},
                           idempotency=IdempotencyKey.parse("release-1", caller="", field="Idempotency-Key"))
    assert svc.release({"agent": "a1", "task_id": "cap-1"},
                       idempotency=IdempotencyKey.parse("release-1", caller="", field="Idempotency-Key")) == released


def test_a_keyed_claim_records_its_key_and_stays_in_its_scope(svc, db):
    token = current_principal.set(Principal(key_id="0123456789ab", label="billing", right="write", prefixes=("q",),
                                            caller="0123456789ab"))
    try:
        assert svc.claim({"agent": "billing-1"})["claimed"]["id"] == "cap-6"
        with pytest.raises(NotFound):
            svc.claim({"agent": "billing-1", "task_id": "cap-1"})
        with pytest.raises(Forbidden):
            svc.claim({"agent": "billing-1", "project_id": "p"})
        with pytest.raises(NotFound):
            svc.release({"agent": "billing-1", "task_id": "cap-1"})
    finally:
        current_principal.reset(token)
    assert lease_of(db, "cap-6")["key"] == "0123456789ab"
    reader = current_principal.set(Principal(key_id="ba9876543210", label="r", right="read", prefixes=None,
                                             caller="ba9876543210"))
    try:
        with pytest.raises(Forbidden):
            svc.claim({"agent": "reader"})
    finally:
        current_principal.reset(reader)


def test_the_http_routes(db, clock):
    service = GraphService(db, clock=clock)
    with started_client(create_app(service)) as http:
        http.post("/v1/capsules", json={"items": [{"project_id": "p", "kind": "task", "content": "one"},
                                                  {"project_id": "p", "kind": "task", "content": "two"}]})
        claimed = http.post("/v1/memory_claim", json={"agent": "h1", "project_id": "p"}, headers={"Idempotency-Key": "c1"})
        assert claimed.status_code == 200 and claimed.json()["claimed"]["id"] == "cap-1"
        replay = http.post("/v1/memory_claim", json={"agent": "h1", "project_id": "p"}, headers={"Idempotency-Key": "c1"})
        assert replay.json() == claimed.json()
        conflict = http.post("/v1/memory_claim", json={"agent": "h2", "task_id": "cap-1"})
        assert conflict.status_code == 409 and conflict.json()["error"]["details"][0]["holder"] == "h1"
        bad = http.post("/v1/memory_claim", json={"agent": "h2", "lease_s": 5})
        assert bad.status_code == 422 and "lease_s" in json.dumps(bad.json())
        assert http.post("/v1/memory_bootstrap", json={"project_id": "p", "agent": "h1"}).json()["ready"][
            "next_action"]["held"] == {"lease_until": "2026-12-01T12:15:00.000Z"}
        assert http.post("/v1/memory_digest", json={"project_id": "p"}).json()["ready"]["held_by_others"] == 1
        foreign = http.post("/v1/memory_release", json={"agent": "h2", "task_id": "cap-1"})
        assert foreign.status_code == 409 and "h1" in foreign.json()["error"]["message"]
        released = http.post("/v1/memory_release", json={"agent": "h1", "task_id": "cap-1"})
        assert released.status_code == 200 and released.json() == {"released": True, "task_id": "cap-1"}
        assert http.post("/v1/memory_release", json={"agent": "h1", "task_id": "cap-9"}).status_code == 404
        paths = http.get("/openapi.json").json()["paths"]
        for path in ("/v1/memory_claim", "/v1/memory_release"):
            assert set(paths[path]["post"]["responses"]) >= {"200", "404", "409", "422"}
        claim_schema = paths["/v1/memory_claim"]["post"]["requestBody"]["content"]["application/json"]["schema"]
        assert {"agent", "task_id", "lease_s", "terms"} <= set(json.dumps(claim_schema).replace('"', " ").split())


def test_the_cli_verbs(svc, neo4j_target):
    env = {"NEO4J_URI": neo4j_target.uri, "NEO4J_USER": neo4j_target.user, "NEO4J_PASSWORD": neo4j_target.password,
           "GRAPHSVC_NEO4J_TIMEOUT": "30", "GRAPHSVC_QUERY_TIMEOUT": "60", "PATH": "/usr/bin:/bin"}
    if os.environ.get("PYTHONPATH"):
        env["PYTHONPATH"] = os.environ["PYTHONPATH"]

    def cli(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "graphsvc", *args], env=env, capture_output=True, text=True,
                              timeout=120)

    done = cli("claim", "--agent", "cli-1", "--project-id", "p", "--now", "2026-12-01T12:00:00Z")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["claimed"]["id"] == "cap-1"
    refused = cli("claim", "--agent", "cli-2", "--task-id", "cap-1", "--now", "2026-12-01T12:00:00Z")
    assert refused.returncode != 0 and "cli-1" in refused.stderr
    released = cli("release", "cap-1", "--agent", "cli-1", "--now", "2026-12-01T12:00:00Z")
    assert released.returncode == 0 and json.loads(released.stdout) == {"released": True, "task_id": "cap-1"}


def test_claims_travel_with_export_and_import(svc, db, clock):
    from tests.conftest import wipe

    token = current_principal.set(Principal(key_id="0123456789ab", label="k", right="write", prefixes=None,
                                            caller="0123456789ab"))
    try:
        svc.claim({"agent": "a1", "task_id": "cap-2"})
    finally:
        current_principal.reset(token)
    svc.claim({"agent": "a2", "task_id": "cap-3", "lease_s": 10})  # expired by the time of the import
    text = "".join(svc.export_lines())
    lines = [json.loads(line) for line in text.splitlines()]
    leased = {line["capsule"]["id"]: {k: v for k, v in line["capsule"].items() if k.startswith("lease_")}
              for line in lines if "capsule" in line and "lease_agent" in line["capsule"]}
    assert leased == {
        "cap-2": {"lease_agent": "a1", "lease_key": "0123456789ab", "lease_until": "2026-12-01T12:15:00.000000000Z"},
        "cap-3": {"lease_agent": "a2", "lease_until": "2026-12-01T12:00:10.000000000Z"}}
    clock.now = NOW + timedelta(minutes=1)
    before = canonical_json(svc.bootstrap({"project_id": "p", "agent": "a1"}))
    wipe(db)
    svc.import_lines(text.splitlines())
    assert "".join(svc.export_lines()) == text
    assert canonical_json(svc.bootstrap({"project_id": "p", "agent": "a1"})) == before
    assert lease_of(db, "cap-2") == {"agent": "a1", "until": NOW + timedelta(minutes=15), "key": "0123456789ab"}
    # a resumed import compares the lease too: the same file is already present, another holder is a 409
    assert svc.import_lines(text.splitlines())["already_present"]["capsules"] == 6
    other = text.replace('"lease_agent":"a1"', '"lease_agent":"b1"')
    with pytest.raises(Conflict) as changed:
        svc.import_lines(other.splitlines())
    assert "cap-2 is already stored with other fields (lease_agent)" in changed.value.message


@pytest.mark.parametrize("fields, rule", [
    ({"lease_agent": "a1"}, "come together"),
    ({"lease_until": "2026-12-01T12:15:00.000000000Z"}, "come together"),
    ({"lease_key": "k"}, "needs lease_agent"),
    ({"lease_agent": "has space", "lease_until": "2026-12-01T12:15:00.000000000Z"}, "A-Z"),
    ({"lease_agent": "a1", "lease_until": "2026-12-01T12:15:00.000000000Z", "status": "done"}, "ends its lease"),
])
def test_a_bad_lease_line_is_a_422_naming_the_line(svc, db, fields, rule):
    capsule = {"id": "cap-50", "seq": 50, "project_id": "p", "kind": "task", "tier": "active", "headline": "h",
               "content": "c", "status": "open", "created_at": "2026-12-01T12:00:00.000000000Z",
               "updated_at": "2026-12-01T12:00:00.000000000Z", **fields}
    with pytest.raises(InvalidInput) as refused:
        svc.import_lines([json.dumps({"capsule": capsule})])
    assert "line[1]" in (refused.value.field or "") + json.dumps(refused.value.details or [])
    assert rule in refused.value.message + json.dumps(refused.value.details or [])


def test_get_and_list_show_the_lease(svc):
    svc.claim({"agent": "a1", "task_id": "cap-2"})
    (capsule,) = svc.get(["cap-2"])["capsules"]
    assert (capsule["lease_agent"], capsule["lease_until"]) == ("a1", "2026-12-01T12:15:00.000Z")
    listed = {c["id"]: c for c in svc.list({"project_id": "p"})["capsules"]}
    assert listed["cap-2"]["lease_until"] == "2026-12-01T12:15:00.000Z" and "lease_agent" not in listed["cap-1"]


def test_a_session_starts_with_the_agents_own_claimed_work_first(svc):
    svc.claim({"agent": "a1", "task_id": "cap-3"})
    svc.claim({"agent": "a2", "task_id": "cap-1"})
    ready = svc.session_start({"agent": "a1", "project_id": "p"})["digest"]["ready"]
    assert ready["next_action"]["id"] == "cap-3" and "held" in ready["next_action"]
    assert ready["held_by_others"] == 1
