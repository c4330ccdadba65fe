"""Watches (SPEC §13): wait, without a thread or a Neo4j session, until a watched pack may have changed.

One `ChangeFeed` per process (per event loop) runs ONE poller while watches wait: every
`interval` it reads the change markers moved since its last read (graphsvc.store.changes, one
indexed query) and wakes the watches whose fence holds a changed project. A watch that is not
woken costs nothing but its entry in a set: no pack is computed, no thread or connection held.
The markers are written by the write transactions themselves, so a write through any worker or
service instance wakes the watches of every process.

`watch_pack` is one watch: compute the pack, answer at once when its ETag differs from the
caller's, else wait for the first of: a wake-up from the poller, the next `valid_to` /
`lease_until` in the fence (no write marks that instant: it is read once per wait), `wait_s`,
the client going away, the process shutting down. A wake-up only means "may have changed": the
pack is computed again and compared, and an unchanged pack goes back to waiting.

No lost wake-up: the poller's first read of a run sets its baseline (the markers of the last
`lookback` on Neo4j's clock), and a watch computes its first pack only after that baseline, so a
write committed after the pack's read moves a marker the next poll finds. The watch's event is
cleared before each computation, so a wake-up during one is not lost either.
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
import signal
from dataclasses import dataclass, field
from typing import Any, Awaitable, Callable

from graphsvc import telemetry
from graphsvc.core.etag import etag_of
from graphsvc.core.watch_scope import WatchScope
from graphsvc.errors import Unavailable
from graphsvc.service import GraphService
from graphsvc.surfaces.deadline import run_bounded

log = logging.getLogger(__name__)

#: Seconds between two reads of the change markers while watches wait: the latency a write in
#: scope adds before its watchers wake, for one small indexed read per interval per process.
POLL_INTERVAL = 0.25
#: Watches one process keeps waiting at once; past it a new one is refused (503, retry).
MAX_WATCHERS = 5000
#: Packs that woken watches of one process compute at once: a write that wakes hundreds of watches
#: queues their recomputations instead of sending hundreds of packs to Neo4j together.
RECOMPUTE_CONCURRENCY = 8
#: Seconds past an expiry instant before its pack is computed, so the request clock has passed it.
INSTANT_SLACK = 0.05
#: Milliseconds added to the transaction timeout for the markers' look-back (a mark is stamped by
#: its statement, visible at its commit: at most the transaction's timeout later).
LOOKBACK_MARGIN_MS = 1000


class ShuttingDown(Unavailable):
    """The process is stopping: the watch ends now; the client sends it again (to another process)."""


@dataclass(eq=False)
class Watcher:
    scope: WatchScope
    #: Loop time of the last reason to compute: the end of the poll that woke it (whose read saw
    #: the write), the instant it waited for, or its registration.
    woken_at: float
    event: asyncio.Event = field(default_factory=asyncio.Event)


class ChangeFeed:
    """The one poller of a process and the watches waiting on it."""

    def __init__(self, service: GraphService, interval: float = POLL_INTERVAL, max_watchers: int = MAX_WATCHERS):
        self.service = service
        self.interval = interval
        self.max_watchers = max_watchers
        self.lookback_ms = int(service.db.query_timeout * 1000) + LOOKBACK_MARGIN_MS
        self.closing = False
        self._watchers: set[Watcher] = set()
        self._task: asyncio.Task[None] | None = None
        self._known: dict[str, tuple[int, int]] = {}  # project_id -> (seq, changed_at_ms) last read
        self._cursor: int | None = None  # Neo4j's clock at the last successful read
        self._baseline: asyncio.Event | None = None
        self._recompute: asyncio.Semaphore | None = None
        #: Pack computations in flight, by what they compute: (started at, the future of their pack).
        self._computing: dict[Any, tuple[float, asyncio.Future[Any]]] = {}

    @property
    def watching(self) -> int:
        return len(self._watchers)

    def register(self, scope: WatchScope) -> Watcher:
        if self.closing:
            raise ShuttingDown("this graphsvc process is shutting down; send the watch again.")
        if len(self._watchers) >= self.max_watchers:
            raise Unavailable(f"this graphsvc process already holds {self.max_watchers} watches; retry shortly.")
        watcher = Watcher(scope, asyncio.get_running_loop().time())
        self._watchers.add(watcher)
        telemetry.WATCHERS.inc()
        if self._task is None:
            self._baseline = asyncio.Event()
            self._recompute = self._recompute or asyncio.Semaphore(RECOMPUTE_CONCURRENCY)
            # A fresh context: the poller reads for the whole process, not as the first watcher's key.
            self._task = asyncio.get_running_loop().create_task(self._run(), context=contextvars.Context())
        return watcher

    def unregister(self, watcher: Watcher) -> None:
        if watcher in self._watchers:
            self._watchers.discard(watcher)
            telemetry.WATCHERS.dec()

    async def baseline(self) -> None:
        """Return once the running poller has read its baseline (see the module docstring)."""
        assert self._baseline is not None
        await self._baseline.wait()

    def close(self) -> None:
        """End every watch now (they answer 503: send it again) and refuse new ones: the process stops."""
        self.closing = True
        for watcher in list(self._watchers):
            watcher.event.set()
        if self._task is not None:
            self._task.cancel()  # its read, if one is running, is abandoned: nobody waits for it now

    async def _run(self) -> None:
        try:
            while self._watchers and not self.closing:
                await self._poll()
                await asyncio.sleep(self.interval)
        finally:
            # The next watch starts a new run with a new baseline: what happened meanwhile was unwatched.
            self._task, self._cursor, self._known = None, None, {}
            if self._baseline is not None:
                self._baseline.set()  # a watch waiting for it goes on to its own bound (or the shutdown)

    async def _poll(self) -> None:
        try:
            now_ms, rows = await run_bounded_for(self.service.request_bound, self.service.changes_since,
                                                 self._cursor, self.lookback_ms)
        except Unavailable as exc:
            log.warning("watch poll failed (%s); the watches wait on until it succeeds or their wait_s ends",
                        exc.message)
            return
        except Exception:  # the poller must outlive one bad read: every watch depends on it
            log.exception("watch poll failed")
            return
        telemetry.WATCH_POLLS.inc()
        first = self._cursor is None
        changed = []
        for project_id, seq, changed_at in rows:
            if self._known.get(project_id, (None,))[0] != seq:
                changed.append(project_id)
            self._known[project_id] = (seq, changed_at)
        self._cursor = now_ms
        horizon = now_ms - self.lookback_ms
        self._known = {project: known for project, known in self._known.items() if known[1] >= horizon}
        if first:
            assert self._baseline is not None
            self._baseline.set()
            return
        if changed:
            read = asyncio.get_running_loop().time()  # after the read that saw the writes
            for watcher in list(self._watchers):
                if any(watcher.scope.matches(project_id) for project_id in changed):
                    watcher.woken_at = read
                    watcher.event.set()

    async def recompute(self, key: Any, not_before: float, work: Callable[[], Awaitable[Any]]) -> Any:
        """`work()`'s pack, shared with the watches of the same `key` (pack, request, caller) that ask
        while it runs: a write that wakes a hundred watches of one request computes one pack. A
        computation is shared only with watches woken before it started (`not_before`: the end of the
        poll that woke the watch, whose read saw the write), so its own read saw that write too."""
        running = self._computing.get(key)
        if running is not None and running[0] >= not_before:
            try:
                return await asyncio.shield(running[1])
            except asyncio.CancelledError:
                if not running[1].cancelled():
                    raise  # this watch itself was cancelled
                # the watch that started it was cancelled (its request ended): compute our own
        assert self._recompute is not None
        loop = asyncio.get_running_loop()
        result: asyncio.Future[Any] = loop.create_future()
        entry = (loop.time(), result)
        self._computing[key] = entry
        try:
            async with self._recompute:
                value = await work()
            result.set_result(value)
            return value
        except Exception as exc:
            result.set_exception(exc)
            result.exception()  # retrieved: a computation nobody else waited for must not warn
            raise
        except BaseException:
            result.cancel()
            raise
        finally:
            if self._computing.get(key) is entry:
                del self._computing[key]


async def run_bounded_for(seconds: float, fn: Callable[..., Any], *args: Any) -> Any:
    """`fn(*args)` in a worker thread, bounded by `seconds` (the poller runs outside any request's bound)."""
    from graphsvc.surfaces.deadline import within

    with within(seconds):
        return await run_bounded(fn, *args)


@dataclass
class Outcome:
    """A watch's answer: a new pack and its ETag, or None when `wait_s` passed with the caller's pack current."""

    pack: dict[str, Any] | None
    etag: str | None


async def watch_pack(feed: ChangeFeed, pack_name: str, compute: Callable[[dict[str, Any]], dict[str, Any]],
                     request: dict[str, Any], etag: str | None, wait_s: int, scope: WatchScope,
                     gone: asyncio.Event | None = None, share: Any = None) -> Outcome:
    """One watch (module docstring). `compute` is the service's pack operation; `gone` is set when
    the client went away (the watch then ends at once with nothing to send). `share`: what makes two
    watches' packs the same (the request and the caller's scope); None computes this watch's own."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + wait_s

    async def computed() -> dict[str, Any]:
        pack = await run_bounded(compute, request)
        telemetry.WATCH_PACKS.labels(pack=pack_name).inc()
        return pack

    watcher = feed.register(scope)
    stopper = None
    if gone is not None:
        stopper = loop.create_task(_forward(gone, watcher.event))
    try:
        await _until(feed.baseline(), deadline - loop.time(), watcher, feed, gone)
        instant_due = False
        while True:
            if feed.closing:
                raise ShuttingDown("this graphsvc process is shutting down; send the watch again.")
            if gone is not None and gone.is_set():
                return Outcome(None, etag)
            if loop.time() >= deadline and not watcher.event.is_set() and not instant_due:
                telemetry.WATCH_ANSWERS.labels(outcome="not_modified").inc()
                return Outcome(None, etag)
            watcher.event.clear()
            pack = await feed.recompute((pack_name, share) if share is not None else watcher, watcher.woken_at,
                                        computed)
            current = etag_of(pack)
            if current != etag:
                telemetry.WATCH_ANSWERS.labels(outcome="changed").inc()
                return Outcome(pack, current)
            instant = await run_bounded(feed.service.next_change_instant, scope)
            wait = deadline - loop.time()
            instant_due = False
            if instant is not None:
                until_instant = (instant - feed.service.clock()).total_seconds() + INSTANT_SLACK
                if until_instant < wait:
                    wait, instant_due = max(until_instant, 0.0), True
            if wait > 0:
                try:
                    await asyncio.wait_for(watcher.event.wait(), wait)
                    instant_due = False  # woken by a write (or shutdown / disconnect), not the instant
                except TimeoutError:
                    watcher.woken_at = loop.time()
    finally:
        feed.unregister(watcher)
        if stopper is not None:
            stopper.cancel()


async def _forward(source: asyncio.Event, target: asyncio.Event) -> None:
    await source.wait()
    target.set()


async def _until(step: Awaitable[None], seconds: float, watcher: Watcher, feed: ChangeFeed,
                 gone: asyncio.Event | None) -> None:
    """Wait for `step` at most `seconds` (the watch's own bound), ending early on shutdown or disconnect."""
    task = asyncio.ensure_future(step)
    waker = asyncio.ensure_future(watcher.event.wait())
    try:
        done, _ = await asyncio.wait({task, waker}, timeout=max(seconds, 0.0), return_when=asyncio.FIRST_COMPLETED)
    finally:
        task.cancel()
        waker.cancel()
    if task not in done and not feed.closing and not (gone is not None and gone.is_set()):
        raise Unavailable("Neo4j did not answer the watch's first read of the change markers in time; retry shortly.")


def chain_shutdown_signals(feed: ChangeFeed) -> Callable[[], None]:
    """End the watches as soon as SIGTERM / SIGINT arrives, not when the shutdown grace has run out.

    uvicorn waits GRAPHSVC_SHUTDOWN_GRACE_S for open requests before it tells the app, and a watch
    may be open for a minute: so the handlers uvicorn installed are wrapped (called after
    `feed.close`). Only possible in the main thread (a `graphsvc serve` worker); elsewhere (an app
    served from a test's thread) the watches end with the app's shutdown. Returns the undo.
    """
    loop = asyncio.get_running_loop()
    previous: dict[int, Any] = {}
    for number in (signal.SIGTERM, signal.SIGINT):
        try:
            handler = signal.getsignal(number)

            def chained(sig: int, frame: Any, handler: Any = handler) -> None:
                loop.call_soon_threadsafe(feed.close)
                if callable(handler):
                    handler(sig, frame)
                elif handler == signal.SIG_DFL:  # what the signal would have done without this wrapper
                    signal.signal(sig, signal.SIG_DFL)
                    signal.raise_signal(sig)

            signal.signal(number, chained)
            previous[number] = handler
        except ValueError:  # not the main thread
            break

    def undo() -> None:
        for number, handler in previous.items():
            try:
                if signal.getsignal(number).__name__ == "chained":  # type: ignore[union-attr]
                    signal.signal(number, handler)
            except (ValueError, AttributeError, TypeError):
                pass

    return undo
