"""Claims races (SPEC §12).

Across processes: 32 agents claim at once through `graphsvc serve --workers 2` on a 200-task DAG,
round after round. No node is ever claimed twice, and whenever an agent is told `all_held`, no
ready node is left unclaimed. The lock is Neo4j's (the lease written under the node's write lock),
so this holds across the two worker processes that share nothing in memory. The DAG: 100 tasks
ready at first, each of the other 100 blocked by one of them; once every first-wave task is claimed
and done, the second wave becomes ready and the rounds go on.

In one process (the claimers meet at a node far more often), and the half-applied commit such a
meeting can show a claimer, stored while another transaction holds the node's lock.
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from typing import Callable, TypeVar
from datetime import timedelta

import httpx
import pytest

from graphsvc.errors import Conflict
from tests.integration.locking_support import after_a_locking_write
from tests.integration.service_support import NOW

from tests.integration.test_workers import children, serve

AGENTS = 32
WAVE = 100
PROJECT = "race"
T = TypeVar("T")


def post(base: str, path: str, body: dict) -> httpx.Response:
    """A fresh connection per request, so the kernel spreads them over both workers; a 503 (a busy shared
    machine) is retried, as its Retry-After asks."""
    for _attempt in range(20):
        response = httpx.post(base + path, json=body, timeout=60.0)
        if response.status_code != 503:
            return response
        time.sleep(0.2)
    return response


def at_once(names: list[str], claim: Callable[[str], T]) -> list[tuple[str, T]]:
    """`claim(name)` for every name, each in its own thread, all released together by a barrier."""
    answers: list[tuple[str, T]] = []
    lock = threading.Lock()
    start = threading.Barrier(len(names))

    def agent(name: str) -> None:
        start.wait()
        answer = claim(name)
        with lock:
            answers.append((name, answer))

    pool = [threading.Thread(target=agent, args=(name,)) for name in names]
    for thread in pool:
        thread.start()
    for thread in pool:
        thread.join(timeout=300)
    assert len(answers) == len(names), "a claimer did not answer within 300 s"
    return answers


def unclaimed_ready(db) -> list[str]:
    """Ready nodes of the project with no live lease, straight from the graph (not through a pack)."""
    return [r["id"] for r in db._driver.execute_query(
        "MATCH (c:Capsule {project_id: $p}) WHERE c.ready = true AND (c.lease_until IS NULL OR c.lease_until <= "
        "datetime()) RETURN c.id AS id ORDER BY c.seq", p=PROJECT).records]


def stored_leases(db, project: str) -> dict[str, str]:
    """Each leased node of the project -> its lease's agent, straight from the graph."""
    return {r["id"]: r["agent"] for r in db._driver.execute_query(
        "MATCH (c:Capsule {project_id: $p}) WHERE c.lease_agent IS NOT NULL "
        "RETURN c.id AS id, c.lease_agent AS agent", p=project).records}


def test_32_claimers_over_two_workers_never_share_a_node(db, neo4j_target):
    with serve(neo4j_target, workers=2) as (client, proc):
        assert len(children(proc.pid)) == 2
        base = str(client.base_url).rstrip("/")
        first = post(base, "/v1/capsules", {"items": [
            {"project_id": PROJECT, "kind": "task", "content": f"wave one task {n}"} for n in range(WAVE)]})
        assert first.status_code == 201, first.text
        wave_one = first.json()["ids"]
        second = post(base, "/v1/capsules", {"items": [
            {"project_id": PROJECT, "kind": "task", "content": f"wave two task {n}", "blocked_by": [wave_one[n]]}
            for n in range(WAVE)]})
        assert second.status_code == 201, second.text

        holders: dict[str, str] = {}  # node -> the agent that claimed it
        claims: Counter[str] = Counter()
        rounds = 0
        all_held_rounds = 0
        while rounds < 12:
            rounds += 1
            answers = at_once([f"agent-{rounds}-{n}" for n in range(AGENTS)], lambda name: post(
                base, "/v1/memory_claim", {"agent": name, "project_prefix": PROJECT}))
            assert all(r.status_code == 200 for _, r in answers), [r.text for _, r in answers if r.status_code != 200][:3]
            bodies = [(name, r.json()) for name, r in answers]
            got = [(name, body["claimed"]["id"]) for name, body in bodies if body["claimed"] is not None]
            for name, node in got:
                claims[node] += 1
                holders[node] = name
            assert all(count == 1 for count in claims.values()), [n for n, c in claims.items() if c > 1]
            reasons = {body["reason"] for _, body in bodies if body["claimed"] is None}
            assert reasons <= {"all_held"}, reasons
            if reasons:
                all_held_rounds += 1
                # someone was told all_held: every ready node is held (by this round's winners or earlier ones)
                assert unclaimed_ready(db) == [], "a ready node was left unclaimed while an agent got all_held"
            # the store agrees with the answers: each claimed node carries its claimer's lease
            leases = stored_leases(db, PROJECT)
            assert {node: holders[node] for node in leases} == leases
            if not got:  # nothing left to claim: finish the claimed work, which frees the next wave
                if len(claims) == 2 * WAVE:
                    break
                for node in sorted(leases):
                    done = httpx.patch(f"{base}/v1/capsules/{node}", json={"status": "done"}, timeout=60.0)
                    assert done.status_code == 200, done.text
        assert len(claims) == 2 * WAVE, f"{len(claims)} of {2 * WAVE} tasks claimed in {rounds} rounds"
        assert all_held_rounds >= 2  # each wave ended with agents told all_held


def test_claimers_in_one_process_never_share_a_node_nor_lose_a_lease(svc, db):
    """The same race without HTTP in between, so the claimers meet at the node far more often: 32
    threads claim at once on a fresh wave of 100 ready tasks, round after round, for several waves.
    Each claimer looks at a node before it takes the node's lock, and that look may meet another
    claimer's commit half applied (its lease_agent there, its lease_until not yet); such a look
    must decide nothing (cypher/claims/take.cypher). Every answer's node carries its answerer's
    lease, and no node is answered twice."""
    for wave in range(3):
        project = f"{PROJECT}-{wave}"
        ids = svc.ingest({"items": [{"project_id": project, "kind": "task", "content": f"task {n}"}
                                    for n in range(WAVE)]})["ids"]
        holders: dict[str, str] = {}
        claims: Counter[str] = Counter()
        for rounds in range(1, 12):
            answers = at_once([f"agent-{wave}-{rounds}-{n}" for n in range(AGENTS)],
                              lambda name: svc.claim({"agent": name, "project_prefix": project}))
            got = [(name, answer["claimed"]["id"]) for name, answer in answers if answer["claimed"] is not None]
            for name, node in got:
                claims[node] += 1
                holders[node] = name
            assert [n for n, c in claims.items() if c > 1] == [], f"wave {wave}, round {rounds}"
            leases = stored_leases(db, project)
            assert leases == holders, f"wave {wave}, round {rounds}: answers and stored leases differ"
            if not got:
                break
        assert sorted(claims) == sorted(ids)


@pytest.mark.parametrize("named", [True, False], ids=["task_id", "next"])
def test_a_look_at_a_half_committed_lease_decides_nothing(svc, db, named):
    """Deterministic form of the race above. A claimer looks at the node before it takes its lock;
    that look can meet another claimer's commit half applied: its lease_agent there, its lease_until
    not yet. Such a node is stored here as that look would see it, while another transaction holds
    the node's lock and writes a whole lease. The claimer must wait for that lock and then see the
    lease (refused, held by that writer): had it decided on the half lease (no live lease, so take
    it), its write would land after the other's commit and both would be told they hold the node."""
    [node] = svc.ingest({"items": [{"project_id": "half", "kind": "task", "content": "the only task"}]})["ids"]
    db._driver.execute_query("MATCH (c:Capsule {id: $id}) SET c.lease_agent = 'half-applied'", id=node)
    request = {"agent": "late", "task_id": node} if named else {"agent": "late", "project_id": "half"}
    got = after_a_locking_write(
        db, ["MATCH (c:Capsule {id: $id}) SET c.lease_agent = 'first', c.lease_until = $until"],
        lambda: svc.claim(request), id=node, until=NOW + timedelta(seconds=900))
    if named:
        assert isinstance(got, Conflict) and got.details[0]["reason"] == "held", got
        assert got.details[0]["holder"] == "first"
    else:
        assert got == {"claimed": None, "reason": "all_held"}
    [stored] = db._driver.execute_query("MATCH (c:Capsule {id: $id}) RETURN c.lease_agent AS agent", id=node).records
    assert stored["agent"] == "first"
