"""The write-side warm-up plans every write statement and stores nothing."""

from __future__ import annotations

from graphsvc.store import cypher
from graphsvc.store.warmup import STATEMENTS, warm_write_plans


def test_the_warm_up_stores_nothing_and_names_real_statements(db):
    for name, _ in STATEMENTS:
        assert cypher.load(name)  # every statement it plans exists
    refreshes = {f"maintain/{path.stem}" for path in (cypher.cypher_dir() / "maintain").glob("refresh_*.cypher")}
    assert refreshes <= {name for name, _ in STATEMENTS}  # every write runs them all
    before = db._driver.execute_query("MATCH (n) RETURN count(n) AS n").records[0]["n"]
    warm_write_plans(db)
    warm_write_plans(db)
    after = db._driver.execute_query("MATCH (n) RETURN count(n) AS n").records[0]["n"]
    assert after == before  # rolled back: not even the lock node or a counter appeared


def test_ingest_update_tombstone_and_relate_run_no_statement_planned_later(db, monkeypatch):
    """A re-warm lets these writes through before it plans warmup.LATER: none of them may run one."""
    from datetime import datetime, timezone

    from graphsvc.clock import fixed_clock
    from graphsvc.service import GraphService
    from graphsvc.store import db as store_db
    from graphsvc.store.idempotency import IdempotencyKey
    from graphsvc.store.warmup import LATER

    ran: list[str] = []
    previous = store_db.plan_observer

    def observe(name: str, changed: bool) -> None:
        ran.append(name)
        if previous is not None:
            previous(name, changed)

    monkeypatch.setattr(store_db, "plan_observer", observe)
    service = GraphService(db, clock=fixed_clock(datetime(2026, 12, 7, tzinfo=timezone.utc)))
    first = service.ingest({"items": [{"project_id": "later", "kind": "task", "content": "first"},
                                      {"project_id": "later", "kind": "decision", "content": "old"}]},
                           idempotency=IdempotencyKey(caller="", key="later-1"))["ids"]
    second = service.ingest({"project_id": "later", "kind": "task", "content": "second",
                             "blocked_by": [first[0]]})["ids"]
    service.ingest({"project_id": "later", "kind": "decision", "content": "new", "supersedes": [first[1]]})
    service.relate({"add": [{"type": "BLOCKS", "from": second[0], "to": first[0]}]})  # a cycle: kept, named
    service.relate({"remove": [{"type": "BLOCKS", "from": second[0], "to": first[0]}],
                    "add": [{"type": "SUPERSEDES", "from": second[0], "to": first[1]}]})
    service.update(first[0], {"status": "done"}, idempotency=IdempotencyKey(caller="", key="later-2"))
    service.tombstone([second[0]])
    assert {"capsules/create", "order/create_blocks", "capsules/update", "capsules/tombstone"} <= set(ran)
    assert not set(ran) & LATER
