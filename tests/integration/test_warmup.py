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
