"""Races made deterministic: another transaction does its write first and holds the locks it took
while the call under test starts; the call must wait for those locks, and then answer on what the
other transaction committed (graphsvc's statements read a node only once they hold its lock)."""

from __future__ import annotations

import threading
from typing import Any, Callable


def after_a_locking_write(db, statements: list[str], call: Callable[[], Any], **params: Any) -> Any:
    """Run `statements` (with `params`) in an open transaction, start `call` in a thread, check that
    it waits, commit, and return what `call` returned (or the exception it raised)."""
    answer: list[Any] = []

    def run_call() -> None:
        try:
            answer.append(call())
        except Exception as exc:  # the answer under test may be a refusal
            answer.append(exc)

    with db._driver.session() as session:
        other = session.begin_transaction()
        for statement in statements:
            other.run(statement, params).consume()
        caller = threading.Thread(target=run_call)
        caller.start()
        caller.join(timeout=1.0)
        assert caller.is_alive(), "the call answered without waiting for the locks the other write holds"
        other.commit()
        caller.join(timeout=30)
    assert len(answer) == 1, "the call did not answer within 30 s of the other write's commit"
    return answer[0]
