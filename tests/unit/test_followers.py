"""graphsvc.store.db.Followers: what committed writes ask to run after them, run in the background,
a burst merged into one run per statement, and nothing lost when one run fails."""

from __future__ import annotations

import threading

from graphsvc.store.db import Followers


def test_a_burst_is_merged_into_one_run_with_the_union_of_the_lists():
    ran: list[tuple[str, dict]] = []
    gate, running = threading.Event(), threading.Event()

    def run_one(name, params):
        running.set()
        gate.wait(5)  # hold the thread on the first run so the rest pile up behind it
        ran.append((name, params))

    followers = Followers(run_one)
    followers.add([("changes/mark", {"project_ids": ["a"]})])
    assert running.wait(5)
    followers.add([("changes/mark", {"project_ids": ["c", "b"]})])
    followers.add([("changes/mark", {"project_ids": ["b", "d"]}), ("other", {"project_ids": ["x"], "n": 1})])
    followers.add([("other", {"project_ids": ["y"], "n": 2})])
    gate.set()
    assert followers.settle(5)
    assert ran[0] == ("changes/mark", {"project_ids": ["a"]})
    assert sorted(ran[1:], key=repr) == sorted([
        ("changes/mark", {"project_ids": ["b", "c", "d"]}),
        ("other", {"project_ids": ["x"], "n": 1}),  # other parameters differ: never merged
        ("other", {"project_ids": ["y"], "n": 2}),
    ], key=repr)
    followers.stop()


def test_a_failing_run_is_logged_and_the_next_ones_still_run(caplog):
    ran: list[str] = []

    def run_one(name, params):
        if name == "bad":
            raise RuntimeError("boom")
        ran.append(name)

    followers = Followers(run_one)
    followers.add([("bad", {}), ("good", {})])
    assert followers.settle(5)
    followers.add([("later", {})])
    assert followers.settle(5)
    assert ran == ["good", "later"]
    assert "bad after a committed write failed" in caplog.text
    followers.stop()


def test_settle_is_bounded_while_a_run_hangs():
    release = threading.Event()
    followers = Followers(lambda name, params: release.wait(10))
    followers.add([("slow", {})])
    assert not followers.settle(0.2)
    release.set()
    assert followers.settle(5)
    followers.stop()


def test_settle_with_nothing_queued_answers_at_once():
    assert Followers(lambda name, params: None).settle(0)


def test_only_lists_of_strings_or_integers_are_united():
    ran: list[tuple[str, dict]] = []
    gate, running = threading.Event(), threading.Event()

    def run_one(name, params):
        running.set()
        gate.wait(5)
        ran.append((name, params))

    followers = Followers(run_one)
    followers.add([("first", {})])
    assert running.wait(5)
    followers.add([("rows", {"rows": [{"a": 1}]}), ("rows", {"rows": [{"a": 2}]}), ("rows", {"rows": [{"a": 1}]})])
    gate.set()
    assert followers.settle(5)
    assert ran[1:] == [("rows", {"rows": [{"a": 1}]}), ("rows", {"rows": [{"a": 2}]})]  # equal runs once, others apart
    followers.stop()
