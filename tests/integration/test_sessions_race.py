"""Finishes racing (SPEC §11): many sessions of one agent in one project finish at the same instant, round
after round, in threads of one process and through `graphsvc serve --workers 2`. Each finish supersedes the
live handoffs it reads; the per-(agent, project) lock (cypher/sessions/lock_handoffs.cypher) makes the later
finish read the earlier one's handoff, so exactly one handoff per (agent, project) stays live, and the
handoffs of each pair form one chain, each superseding the one before it."""

from __future__ import annotations

import threading
from collections import Counter
from datetime import datetime, timezone
from typing import Callable

from graphsvc.clock import fixed_clock
from graphsvc.service import GraphService
from tests.integration.test_claims_race import post
from tests.integration.test_workers import children, serve

NOW = datetime(2026, 12, 1, 12, 0, tzinfo=timezone.utc)
PAIRS = (("a", "p"), ("a", "q"), ("b", "p"))
SESSIONS_PER_PAIR = 4
ROUNDS = 6


def live_handoffs(db) -> Counter[tuple[str, str]]:
    """Live (not tombstoned, not superseded) handoffs per (agent, project), straight from the graph."""
    return Counter((r["agent"], r["project_id"]) for r in db._driver.execute_query(
        "MATCH (h:Handoff) WHERE h.tombstoned_at IS NULL AND NOT coalesce(h.superseded, false) "
        "RETURN h.agent AS agent, h.project_id AS project_id").records)


def chains_are_single(db) -> None:
    """Every handoff of a pair but its first supersedes exactly one, and none is superseded twice."""
    rows = db._driver.execute_query(
        "MATCH (h:Handoff) OPTIONAL MATCH (h)-[:SUPERSEDES]->(old:Handoff) "
        "OPTIONAL MATCH (newer:Handoff)-[:SUPERSEDES]->(h) "
        "RETURN h.id AS id, h.agent AS agent, h.project_id AS project_id, count(DISTINCT old) AS older, "
        "count(DISTINCT newer) AS newer").records
    for agent, project_id in PAIRS:
        mine = [r for r in rows if (r["agent"], r["project_id"]) == (agent, project_id)]
        assert sorted(r["older"] for r in mine) == [0] + [1] * (len(mine) - 1), (agent, project_id, mine)
        assert sorted(r["newer"] for r in mine) == [0] + [1] * (len(mine) - 1), (agent, project_id, mine)


def race(finishes: list[Callable[[], None]]) -> None:
    """Run the finishes in threads released together; every one must return."""
    start = threading.Barrier(len(finishes))
    errors: list[BaseException] = []

    def run(finish: Callable[[], None]) -> None:
        start.wait()
        try:
            finish()
        except BaseException as exc:  # reported below: a thread's exception would pass unseen
            errors.append(exc)

    pool = [threading.Thread(target=run, args=(finish,)) for finish in finishes]
    for thread in pool:
        thread.start()
    for thread in pool:
        thread.join(timeout=300)
    assert not any(thread.is_alive() for thread in pool), "a finish did not return"
    assert not errors, errors


def test_racing_finishes_in_one_process_leave_one_live_handoff_per_agent_and_project(db):
    svc = GraphService(db, clock=fixed_clock(NOW))
    svc.warm(writes=True)  # as start-up does: a cold plan would outlive the query timeout, not the race
    for round_ in range(ROUNDS):
        with db.longer_timeout():  # the set-up, not the race: a start computes the digest
            sessions = [svc.session_start({"agent": agent, "project_id": project_id})["session_id"]
                        for agent, project_id in PAIRS for _ in range(SESSIONS_PER_PAIR)]

        def finish(session_id: str) -> Callable[[], None]:
            return lambda: svc.session_finish({"session_id": session_id, "handoff": f"round {round_} {session_id}"})

        race([finish(session_id) for session_id in sessions])
        assert live_handoffs(db) == Counter({pair: 1 for pair in PAIRS}), f"round {round_}"
    chains_are_single(db)


def test_racing_finishes_over_two_workers_leave_one_live_handoff_per_agent_and_project(db, neo4j_target):
    with serve(neo4j_target, workers=2) as (client, proc):
        assert len(children(proc.pid)) == 2
        base = str(client.base_url).rstrip("/")
        for round_ in range(ROUNDS // 2):
            sessions = []
            for agent, project_id in PAIRS:
                for _ in range(SESSIONS_PER_PAIR):
                    started = post(base, "/v1/sessions", {"agent": agent, "project_id": project_id})
                    assert started.status_code == 201, started.text
                    sessions.append(started.json()["session_id"])

            def finish(session_id: str) -> Callable[[], None]:
                def call() -> None:
                    done = post(base, f"/v1/sessions/{session_id}/finish", {"handoff": f"round {round_}"})
                    assert done.status_code == 200, done.text
                return call

            race([finish(session_id) for session_id in sessions])
            assert live_handoffs(db) == Counter({pair: 1 for pair in PAIRS}), f"round {round_}"
    chains_are_single(db)
