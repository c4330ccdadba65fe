"""Cooperative stop and liveness for long work (an import or export of many transactions).

The worker thread calls `step()` before each transaction and between chunks of its own work:
that raises `Stopped` once the surface asked it to stop (its HTTP client went away, or a step
outlived the request's bound), so no further transaction starts, and it records the moment, so
the surface can tell a slow-but-moving import from one stuck in a single transaction.
"""

from __future__ import annotations

import threading
import time

from graphsvc.errors import Unavailable


class Stopped(Unavailable):
    """The work was stopped between two transactions; what it committed stays (an import resumes)."""


class Watch:
    def __init__(self) -> None:
        self._stop = threading.Event()
        self.reason = ""
        self.last_step = time.monotonic()

    def stop(self, reason: str) -> None:
        if not self._stop.is_set():
            self.reason = reason
            self._stop.set()

    @property
    def stopped(self) -> bool:
        return self._stop.is_set()

    def step(self) -> None:
        if self._stop.is_set():
            raise Stopped(f"stopped before its next transaction: {self.reason}")
        self.last_step = time.monotonic()

    def idle(self) -> float:
        """Seconds since the last step."""
        return time.monotonic() - self.last_step
