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

Each call also waits for one of its service's call slots (`CallSlots`, GRAPHSVC_NEO4J_CONCURRENCY):
at most that many calls of a process work on Neo4j at once, the others wait their turn in arrival
order, inside the same bound. Neo4j's CPU is what a mix of agents exhausts; with every request in it
at once, each transaction is slowed by all the others and a large write outlives its bound while
the JVM is still cold. Measured on 2 cores with 16 clients on a freshly started Neo4j
(bench/RESULTS.md, "Calls in line"): two slots per worker answered ~25 % more requests per second
and no 503 in a minute, where every request in Neo4j at once had ingests and packs cut off.
"""

from __future__ import annotations

import asyncio
import functools
import time
import weakref
from contextlib import asynccontextmanager, contextmanager
from contextvars import ContextVar
from typing import Any, AsyncIterator, Callable, Iterator, TypeVar

import anyio
from starlette.types import ASGIApp, Receive, Scope, Send

from graphsvc import telemetry
from graphsvc.errors import Unavailable
from graphsvc.request_context import call_deadline
from graphsvc.watch import Stopped, Watch

T = TypeVar("T")

_bound: ContextVar[float | None] = ContextVar("graphsvc_call_bound", default=None)


class CallSlots:
    """At most `count` calls hold a worker thread at once (None: no limit); the rest wait in arrival
    order (anyio's CapacityLimiter wakes its waiters first in, first out).

    The limiter belongs to the event loop it was made in; each loop gets its own (a process serves
    from one loop, a test client may start several one after the other)."""

    def __init__(self, count: int | None):
        if count is not None and count < 1:
            raise ValueError(f"call slots must be at least 1, not {count}")
        self.count = count
        self._loop: asyncio.AbstractEventLoop | None = None
        self._limiter: anyio.CapacityLimiter | None = None

    def limiter(self) -> anyio.CapacityLimiter | None:
        if self.count is None:
            return None
        loop = asyncio.get_running_loop()
        if self._limiter is None or self._loop is not loop:
            self._loop, self._limiter = loop, anyio.CapacityLimiter(self.count)
        return self._limiter


_slots_by_service: "weakref.WeakKeyDictionary[Any, CallSlots]" = weakref.WeakKeyDictionary()


def call_slots(service: Any) -> CallSlots:
    """The one `CallSlots` of `service` (its `call_concurrency`), shared by every surface of the process."""
    slots = _slots_by_service.get(service)
    if slots is None:
        slots = _slots_by_service[service] = CallSlots(getattr(service, "call_concurrency", None))
    return slots


_slots: ContextVar[CallSlots | None] = ContextVar("graphsvc_call_slots", default=None)


def exceeded(seconds: float) -> Unavailable:
    return Unavailable(f"Neo4j did not answer within {seconds:g} s (GRAPHSVC_NEO4J_TIMEOUT + "
                       "GRAPHSVC_QUERY_TIMEOUT); retry shortly.")


@contextmanager
def within(seconds: float | None, slots: CallSlots | None = None) -> Iterator[None]:
    """Calls made through `run_bounded` in this block wait at most `seconds` (None: unbounded), the
    wait for one of `slots` included (None: they do not wait for a slot, as a probe must not queue
    behind the work it checks on)."""
    reset = _bound.set(seconds)
    reset_slots = _slots.set(slots)
    try:
        yield
    finally:
        _slots.reset(reset_slots)
        _bound.reset(reset)


async def run_bounded(fn: Callable[..., T], *args: Any) -> T:
    """`fn(*args)` in a worker thread, given up after the current bound with `Unavailable`."""
    seconds = _bound.get()
    slots = _slots.get()
    work = functools.partial(fn, *args)
    if seconds is None:
        async with _slot(slots):
            return await anyio.to_thread.run_sync(work)
    # The worker thread copies this context: the store sees the same deadline and stops retrying
    # a transient failure when the caller would no longer be waiting for the answer.
    reset = call_deadline.set(time.monotonic() + seconds)
    try:
        with anyio.move_on_after(seconds):
            # A call that spends its bound waiting for a slot never reaches Neo4j. An abandoned call's
            # slot is handed on at once although its thread still waits on Neo4j: that thread ends at
            # its next statement (graphsvc.store.db.Abandoned), and holding the slot for a frozen
            # Neo4j would only keep the next call from getting its own 503 in time.
            async with _slot(slots):
                return await anyio.to_thread.run_sync(work, abandon_on_cancel=True)
    finally:
        call_deadline.reset(reset)
    raise exceeded(seconds)


@asynccontextmanager
async def _slot(slots: CallSlots | None) -> AsyncIterator[None]:
    """Hold one of `slots` (none: nothing to wait for), counting the wait in the metrics."""
    limiter = slots.limiter() if slots is not None else None
    if limiter is None:
        yield
        return
    began = time.monotonic()
    telemetry.CALLS_IN_LINE.inc()
    try:
        await limiter.acquire()
    finally:
        telemetry.CALLS_IN_LINE.dec()
    telemetry.CALL_SLOT_WAIT.observe(time.monotonic() - began)
    try:
        yield
    finally:
        limiter.release()


class RequestDeadline:
    """Pure ASGI middleware: every HTTP request's service calls are bounded by `seconds`."""

    def __init__(self, app: ASGIApp, seconds: float, slots: CallSlots | None = None):
        self.app = app
        self.seconds = seconds
        self.slots = slots

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        with within(self.seconds if scope["type"] == "http" else None, self.slots):
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
