"""memory_digest (SPEC §9) against a real Neo4j: its ready section IS the pack's, its counts, blocked
and newest sections equal a pure-Python reading of the store the test wrote, and the budget holds."""

from __future__ import annotations

import math
from datetime import timedelta
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from graphsvc.core.canonical import canonical_json
from graphsvc.errors import BadRequest
from graphsvc.service import GraphService
from tests.integration.service_support import NOW, Clock

# "px" shares the prefix "p" without being under it (SPEC §2): a prefix fence must leave it out.
PROJECTS = ("p", "p/x", "px", "q")
KINDS = ("task", "task", "epic", "fact", "decision")
FENCES = ({}, {"project_id": "p"}, {"project_prefix": "p"}, {"project_id": "q"},
          {"project_id": "p/x", "project_prefix": "p"}, {"project_id": "px", "project_prefix": "p"})
HUGE = 1_000_000


specs = st.fixed_dictionaries({
    "capsules": st.lists(st.fixed_dictionaries({
        "project_id": st.sampled_from(PROJECTS), "kind": st.sampled_from(KINDS),
        "done": st.booleans(), "expired": st.sampled_from((False, False, True)), "age": st.integers(0, 3000),
    }), min_size=4, max_size=12),
    "blocks": st.lists(st.tuples(st.integers(0, 11), st.integers(0, 11)), max_size=20),
    "supersedes": st.lists(st.tuples(st.integers(0, 11), st.integers(0, 11)), max_size=3),
    "tombstones": st.lists(st.integers(0, 11), max_size=2),
})


def load(svc: GraphService, clock: Clock, spec: dict[str, Any]) -> dict[str, Any]:
    """Write the spec; return what was written as plain data for the oracle."""
    capsules: dict[str, dict[str, Any]] = {}
    for n, item in enumerate(spec["capsules"]):
        clock.now = NOW - timedelta(minutes=item["age"])
        capsule: dict[str, Any] = {"project_id": item["project_id"], "kind": item["kind"], "content": f"capsule {n}"}
        if item["kind"] in ("task", "epic"):
            capsule["status"] = "done" if item["done"] else "open"
        if item["expired"]:
            capsule["valid_to"] = (NOW - timedelta(minutes=1)).isoformat()
        (capsule_id,) = svc.ingest(capsule)["ids"]
        capsules[capsule_id] = {**capsule, "id": capsule_id, "updated_at": clock.now}
    clock.now = NOW
    ids = list(capsules)
    dag = [i for i in ids if capsules[i]["kind"] in ("task", "epic")]
    blocks = sorted({(dag[a % len(dag)], dag[b % len(dag)]) for a, b in spec["blocks"]} if dag else set())
    blocks = [(a, b) for a, b in blocks if a != b]
    supersedes = sorted({(ids[a % len(ids)], ids[b % len(ids)]) for a, b in spec["supersedes"]})
    supersedes = [(a, b) for a, b in supersedes if a != b]
    edges = [{"type": "BLOCKS", "from": a, "to": b} for a, b in blocks]
    edges += [{"type": "SUPERSEDES", "from": a, "to": b} for a, b in supersedes]
    if edges:
        svc.relate({"add": edges})
    tombstoned = sorted({ids[n % len(ids)] for n in spec["tombstones"]})
    if tombstoned:
        svc.tombstone(tombstoned)
    return {"capsules": capsules, "blocks": blocks, "supersedes": supersedes, "tombstoned": set(tombstoned)}


def expected(store: dict[str, Any], fence: dict[str, Any], newest: int) -> dict[str, Any]:
    """Counts, blocked and newest from SPEC §1/§9 alone."""
    def fenced(c: dict[str, Any]) -> bool:
        pid, prefix = fence.get("project_id"), fence.get("project_prefix")
        return ((pid is None or c["project_id"] == pid)
                and (prefix is None or c["project_id"] == prefix or c["project_id"].startswith(prefix + "/")))

    gone = store["tombstoned"]
    superseded = {old for new, old in store["supersedes"] if new not in gone}

    def state(c: dict[str, Any]) -> str:
        if c["id"] in gone:
            return "tombstoned"
        if c["id"] in superseded:
            return "superseded"
        return "expired" if "valid_to" in c else "live"

    counts: dict[str, dict[str, int]] = {}
    for c in store["capsules"].values():
        if fenced(c):
            counts.setdefault(c["kind"], dict.fromkeys(("live", "superseded", "expired", "tombstoned"), 0))[state(c)] += 1
    seq = lambda capsule_id: int(capsule_id[4:])  # noqa: E731
    blockers = {capsule_id: 0 for capsule_id in store["capsules"]}
    for a, b in store["blocks"]:
        source = store["capsules"][a]
        if source.get("status") == "open" and a not in gone and a not in superseded:
            blockers[b] += 1
    blocked = sorted((c for c in store["capsules"].values() if fenced(c) and state(c) == "live"
                      and c.get("status") == "open" and blockers[c["id"]] > 0),
                     key=lambda c: (-blockers[c["id"]], seq(c["id"])))
    live = sorted((c for c in store["capsules"].values() if fenced(c) and state(c) == "live"),
                  key=lambda c: (-c["updated_at"].timestamp(), seq(c["id"])))
    return {"counts": dict(sorted(counts.items())), "blocked_total": len(blocked),
            "blocked": [(c["id"], blockers[c["id"]]) for c in blocked[:10]],
            "newest": [c["id"] for c in live[:newest]]}


def observed(digest: dict[str, Any]) -> dict[str, Any]:
    return {"counts": digest["counts"], "blocked_total": digest["blocked_total"],
            "blocked": [(row["id"], row["blockers"]) for row in digest.get("blocked", [])],
            "newest": [row["id"] for row in digest.get("newest", [])]}


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(spec=specs, newest=st.integers(0, 6))
def test_digest_ready_is_the_packs_and_the_rest_equals_the_oracle(svc, clock, spec, newest):
    svc.db.wipe_all()
    store = load(svc, clock, spec)
    with svc.db.longer_timeout():  # a cold plan takes seconds to compile on a busy machine
        for fence in FENCES:
            pack = svc.bootstrap({**fence, "token_budget": HUGE})
            digest = svc.digest({**fence, "newest": newest, "token_budget": HUGE})
            assert digest["ready"] == pack["ready"] and digest["ready_total"] == pack["ready_total"], fence
            assert observed(digest) == expected(store, fence, newest), fence


def test_the_budget_is_the_whole_body_and_the_floor_is_the_ready_head(svc, clock):
    ids = svc.ingest({"items": [{"project_id": "p", "kind": "task", "content": f"task {n} " + "w" * 30 * n}
                                for n in range(8)]})["ids"]
    svc.relate({"add": [{"type": "BLOCKS", "from": ids[0], "to": ids[n]} for n in range(5, 8)]})
    with svc.db.longer_timeout():
        full = svc.digest({"project_id": "p", "newest": 20, "token_budget": HUGE})
        assert full["budget"]["trimmed_by_budget"] == 0 and full["blocked_total"] == 3
        floor = full["budget"]["floor_tokens"]
        for budget in (0, 1, floor, floor + 40, floor + 300, full["budget"]["used_tokens"]):
            digest = svc.digest({"project_id": "p", "newest": 20, "token_budget": budget})
            body = canonical_json(digest)
            assert digest["budget"]["used_tokens"] == math.ceil(len(body) / 4)
            assert digest["counts"] == full["counts"] and digest["ready_total"] == full["ready_total"]
            if budget == 0:
                assert "ready" not in digest
            else:
                assert digest["ready"]["next_action"] == full["ready"]["next_action"]  # the floor
                if budget >= floor:
                    assert digest["budget"]["used_tokens"] <= budget


def test_blocked_lists_most_open_blockers_first_then_id(svc):
    ids = svc.ingest({"items": [{"project_id": "p", "kind": "task", "content": f"t{n}"} for n in range(8)]})["ids"]
    done = svc.ingest({"project_id": "p", "kind": "task", "content": "finished", "status": "done"})["ids"][0]
    edges = [(ids[0], ids[5]), (ids[1], ids[5]), (ids[2], ids[5]),  # t5: three open blockers
             (ids[0], ids[6]), (done, ids[6]),                      # t6: one open, one done
             (ids[3], ids[7]), (ids[4], ids[7])]                    # t7: two open
    svc.relate({"add": [{"type": "BLOCKS", "from": a, "to": b} for a, b in edges]})
    with svc.db.longer_timeout():
        digest = svc.digest({"project_id": "p"})
    assert [(row["id"], row["blockers"]) for row in digest["blocked"]] == [(ids[5], 3), (ids[7], 2), (ids[6], 1)]
    assert digest["blocked_total"] == 3 and digest["ready_total"] == 5


@pytest.mark.parametrize(("request_body", "field_name"), [
    ({"newest": 21}, "newest"), ({"newest": -1}, "newest"), ({"token_budget": -1}, "token_budget"),
    ({"project_prefix": ""}, "project_prefix"), ({"terms": ["x"]}, "terms"),
])
def test_bad_digest_input_is_a_400_naming_the_field(svc, request_body, field_name):
    with pytest.raises(BadRequest) as caught:
        svc.digest(request_body)
    assert caught.value.field == field_name
