"""Work whose caller stopped waiting is rolled back, never committed late (graphsvc.store.db.Abandoned).

A surface answers 503 once a request's bound passes and leaves the worker thread to finish on its
own; the store then refuses to run another statement or to commit for it. The frozen-Neo4j test
(test_outage.py) shows the effect through HTTP; these pin the rule on a plain Database.
"""

from __future__ import annotations

import time

import pytest

from graphsvc.request_context import call_deadline
from graphsvc.store.db import Abandoned, run


def probes(database) -> int:
    return database.read(lambda tx: tx.run("MATCH (n:AbandonedProbe) RETURN count(n) AS n").single()["n"])


def write_slowly(tx, pause: float) -> str:
    tx.run("CREATE (:AbandonedProbe)").consume()
    time.sleep(pause)  # the caller's bound passes while the transaction is open
    return "done"


def test_work_that_outlives_its_callers_bound_is_rolled_back(database):
    database.wipe_all()
    token = call_deadline.set(time.monotonic() + 0.3)
    try:
        with pytest.raises(Abandoned):
            database.write(lambda tx: write_slowly(tx, 0.6))
        with pytest.raises(Abandoned):  # and nothing new starts for it
            database.write(lambda tx: run(tx, "ping"))
    finally:
        call_deadline.reset(token)
    assert probes(database) == 0


def test_work_within_its_bound_commits(database):
    database.wipe_all()
    token = call_deadline.set(time.monotonic() + 30)
    try:
        assert database.write(lambda tx: write_slowly(tx, 0.1)) == "done"
    finally:
        call_deadline.reset(token)
    assert probes(database) == 1
