"""A wall-clock bound on every call a surface makes into the (synchronous) service.

Neo4j enforces the transaction timeout (GRAPHSVC_QUERY_TIMEOUT) and the driver bounds getting a
connection (GRAPHSVC_NEO4J_TIMEOUT), but a Neo4j that is frozen mid-statement (SIGSTOP, a VM
pause, a dropped network path) enforces nothing, and the driver has no read timeout of its own.
So the surface awaits the worker thread for at most `bound` seconds and answers 503 +
Retry-After when it is exceeded. The thread is abandoned, not killed: once Neo4j answers or its
socket breaks, the store sees the deadline passed and rolls the transaction back at its next
statement or before its commit (graphsvc.store.db.Abandoned), so a thawed Neo4j is not handed a
backlog of work nobody waits for. A commit already sent when the bound passed may still land,
which is why a 503 on a write means "unknown, retry" (the write path's idempotency covers the retry).

The bound is set per request by `RequestDeadline` (HTTP) or `within` (MCP), so the route
modules keep calling `graphsvc.surfaces.http.common.call` unchanged.
"""

from __future__ import annotations

import functools
import time
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, Callable, Iterator, TypeVar

import anyio
from starlette.types import ASGIApp, Receive, Scope, Send

from graphsvc.errors import Unavailable
from graphsvc.request_context import call_deadline
from graphsvc.watch import Stopped, Watch

T = TypeVar("T")

_bound: ContextVar[float | None] = ContextVar("graphsvc_call_bound", default=None)


def exceeded(seconds: float) -> Unavailable:
    return Unavailable(f"Neo4j did not answer within {seconds:g} s (GRAPHSVC_NEO4J_TIMEOUT + "
                       "GRAPHSVC_QUERY_TIMEOUT); retry shortly.")


@contextmanager
def within(seconds: float | None) -> Iterator[None]:
    """Calls made through `run_bounded` in this block wait at most `seconds` (None: unbounded)."""
    reset = _bound.set(seconds)
    try:
        yield
    finally:
        _bound.reset(reset)


async def run_bounded(fn: Callable[..., T], *args: Any) -> T:
    """`fn(*args)` in a worker thread, given up after the current bound with `Unavailable`."""
    seconds = _bound.get()
    work = functools.partial(fn, *args)
    if seconds is None:
        return await anyio.to_thread.run_sync(work)
    # The worker thread copies this context: the store sees the same deadline and stops retrying
    # a transient failure when the caller would no longer be waiting for the answer.
    reset = call_deadline.set(time.monotonic() + seconds)
    try:
        with anyio.move_on_after(seconds):
            return await anyio.to_thread.run_sync(work, abandon_on_cancel=True)
    finally:
        call_deadline.reset(reset)
    raise exceeded(seconds)


class RequestDeadline:
    """Pure ASGI middleware: every HTTP request's service calls are bounded by `seconds`."""

    def __init__(self, app: ASGIApp, seconds: float):
        self.app = app
        self.seconds = seconds

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        with within(self.seconds if scope["type"] == "http" else None):
            await self.app(scope, receive, send)


async def run_watched(fn: Callable[[], T], watch: Watch, receive: Receive | None = None) -> T:
    """`fn()` in a worker thread for work of many transactions that calls `watch.step()` before each
    (an import, an export page run): bounded per STEP, not as a whole.

    When one step outlives the current bound (its transaction hangs: a frozen Neo4j), the watch is
    stopped and the caller gets `Unavailable` (503); when the HTTP client disconnects (`receive`
    yields http.disconnect), the watch is stopped and the caller gets `Stopped`. Either way no
    further transaction starts: the thread ends at its next step (or, frozen, once its socket
    breaks), and what it committed stays (an import is completed by running it again).
    """
    seconds = _bound.get()
    outcome: dict[str, Any] = {}
    try:
        async with anyio.create_task_group() as group:

            async def work() -> None:
                try:
                    outcome["value"] = await anyio.to_thread.run_sync(fn, abandon_on_cancel=True)
                except Exception as exc:  # re-raised below, outside the task group
                    outcome["error"] = exc
                group.cancel_scope.cancel()

            async def guard() -> None:
                assert seconds is not None
                while True:
                    await anyio.sleep(min(0.25, seconds / 4))
                    if watch.idle() > seconds:
                        outcome["error"] = exceeded(seconds)
                        watch.stop(f"one transaction outlived {seconds:g} s")
                        group.cancel_scope.cancel()
                        return

            async def listen() -> None:
                assert receive is not None
                while (await receive())["type"] != "http.disconnect":
                    pass
                watch.stop("the client disconnected")
                outcome["error"] = Stopped("stopped: the client disconnected")
                group.cancel_scope.cancel()

            group.start_soon(work)
            if seconds is not None:
                group.start_soon(guard)
            if receive is not None:
                group.start_soon(listen)
    finally:
        if "value" not in outcome and "error" not in outcome:
            watch.stop("the request was cancelled")
    if "error" in outcome:
        raise outcome["error"]
    return outcome["value"]
