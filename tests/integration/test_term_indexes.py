"""The bench's full-text rebuild (bench.term_indexes): same indexes back online, every pack unchanged."""

from __future__ import annotations

import re

from bench.term_indexes import rebuild_term_indexes
from graphsvc.store import cypher

from .bootstrap_support import NOW, Store


def fulltext_indexes(db) -> dict[str, tuple[str, int]]:
    """name -> (state, id); a rebuilt index comes back under its name with a new id."""
    records = db._driver.execute_query("SHOW FULLTEXT INDEXES YIELD name, state, id RETURN name, state, id").records
    return {record["name"]: (record["state"], record["id"]) for record in records}


def test_the_drop_file_names_every_fulltext_index_the_schema_creates():
    created = re.findall(r"CREATE FULLTEXT INDEX (\w+)", cypher.load("schema"))
    dropped = re.findall(r"DROP INDEX (\w+)", cypher.load("maintenance/drop_term_indexes"))
    assert created and sorted(created) == sorted(dropped)


def test_rebuilding_the_term_indexes_keeps_every_pack(db):
    store = Store(db)
    store.put("constraint", "Refunds go through the payments service", age_days=30)
    store.put("constraint", "Log every deploy", age_days=1)
    store.put("decision", "Refund webhooks are retried for a day", age_days=40)
    store.put("decision", "Use PostgreSQL", age_days=2)
    store.put("task", "Fix the refund rounding bug", age_days=50)
    store.put("task", "Write the release notes", age_days=3)
    store.put("failure_pattern", "A refund twice when the webhook retries", age_days=60)
    requests = [{"project_id": "nott", "terms": ["refund", "webhook"]}, {"terms": ["refunds"]},
                {"project_prefix": "nott", "terms": ["refund"], "token_budget": 300}]
    service = store.at(NOW)
    before = [service.bootstrap(request) for request in requests]
    # terms lifted the old refund rows above the fresh ones: the indexes were in use
    assert before[0]["decisions"][0]["headline"].startswith("Refund webhooks")

    old = fulltext_indexes(db)

    rebuild_term_indexes(db)

    new = fulltext_indexes(db)
    names = {"capsule_terms"}
    assert set(new) == set(old) == names
    assert all(new[name][0] == "ONLINE" and new[name][1] != old[name][1] for name in names)
    assert [service.bootstrap(request) for request in requests] == before
