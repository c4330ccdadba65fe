"""transfer._ahead: an import's rows prepared one chunk ahead in a helper thread."""

from __future__ import annotations

import threading

import pytest

from graphsvc.store.transfer import _ahead


def test_items_come_in_order_each_produced_in_the_helper_thread_one_ahead():
    produced: list[tuple[int, str]] = []
    caller = threading.current_thread().name

    def items():
        for n in range(5):
            produced.append((n, threading.current_thread().name))
            yield n

    seen = []
    for item in _ahead(items(), "ahead-test"):
        seen.append(item)
        # the next item is produced while the caller holds this one, never two ahead
        assert len(produced) <= item + 2
    assert seen == [0, 1, 2, 3, 4]
    assert all(name != caller and name.startswith("ahead-test") for _, name in produced)


def test_an_error_producing_an_item_reaches_the_caller_when_it_asks_for_that_item():
    def items():
        yield 1
        raise ValueError("line 7 changed")

    ahead = _ahead(items(), "ahead-test")
    assert next(ahead) == 1
    with pytest.raises(ValueError, match="line 7 changed"):
        next(ahead)


def test_a_caller_that_stops_early_closes_the_items_once_the_helper_is_done():
    closed = threading.Event()

    def items():
        try:
            for n in range(100):
                yield n
        finally:
            closed.set()

    ahead = _ahead(items(), "ahead-test")
    assert next(ahead) == 0
    ahead.close()
    assert closed.is_set()
    assert not [t for t in threading.enumerate() if t.name.startswith("ahead-test")]
