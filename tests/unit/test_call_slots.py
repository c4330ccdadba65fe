"""Call slots (graphsvc.surfaces.deadline.CallSlots): at most N calls at once, the rest in arrival
order within their bound, probes never in line. Plain functions stand in for the service."""

from __future__ import annotations

import threading
import time

import anyio
import pytest

from graphsvc import telemetry
from graphsvc.config import Settings, call_concurrency, usable_cpus
from graphsvc.errors import Unavailable
from graphsvc.surfaces.deadline import CallSlots, call_slots, run_bounded, within


def _waits_counted() -> float:
    return next(s.value for m in telemetry.CALL_SLOT_WAIT.collect() for s in m.samples
                if s.name.endswith("_count"))


class Recorder:
    """A blocking call that notes how many run at once and the order they started in."""

    def __init__(self, hold: float = 0.05):
        self.hold = hold
        self.lock = threading.Lock()
        self.running = 0
        self.most = 0
        self.started: list[int] = []

    def __call__(self, n: int) -> int:
        with self.lock:
            self.running += 1
            self.most = max(self.most, self.running)
            self.started.append(n)
        time.sleep(self.hold)
        with self.lock:
            self.running -= 1
        return n


def test_at_most_count_calls_run_and_the_rest_start_in_arrival_order() -> None:
    slots = CallSlots(2)
    work = Recorder()
    answers: list[int] = []
    waits_before = _waits_counted()

    async def main() -> None:
        async def one(n: int) -> None:
            with within(10.0, slots):
                answers.append(await run_bounded(work, n))

        async with anyio.create_task_group() as group:
            for n in range(8):
                group.start_soon(one, n)
                await anyio.sleep(0.005)  # a known arrival order

    anyio.run(main)
    assert sorted(answers) == list(range(8))
    assert work.most == 2
    assert work.started == list(range(8))
    assert _waits_counted() - waits_before == 8  # every call's wait for its slot is in /metrics


def test_a_call_that_spends_its_bound_in_line_gets_503_and_never_runs() -> None:
    slots = CallSlots(1)
    long = Recorder(hold=0.6)
    queued = Recorder()
    outcome: dict[str, object] = {}

    async def main() -> None:
        async def holder() -> None:
            with within(10.0, slots):
                await run_bounded(long, 0)

        async def waiter() -> None:
            await anyio.sleep(0.05)
            with within(0.2, slots):
                try:
                    await run_bounded(queued, 1)
                except Unavailable as exc:
                    outcome["error"] = exc

        async with anyio.create_task_group() as group:
            group.start_soon(holder)
            group.start_soon(waiter)

    anyio.run(main)
    assert isinstance(outcome.get("error"), Unavailable)
    assert queued.started == []  # it never reached the (stand-in) Neo4j
    assert long.started == [0]


def test_calls_without_slots_are_not_in_line() -> None:
    """A probe (/readyz, an API-key lookup, the watch poller) runs while every slot is taken."""
    slots = CallSlots(1)
    long = Recorder(hold=0.5)
    probe = Recorder(hold=0.0)
    took: dict[str, float] = {}

    async def main() -> None:
        async def holder() -> None:
            with within(10.0, slots):
                await run_bounded(long, 0)

        async def prober() -> None:
            await anyio.sleep(0.05)
            began = time.monotonic()
            with within(10.0):
                await run_bounded(probe, 1)
            took["probe"] = time.monotonic() - began

        async with anyio.create_task_group() as group:
            group.start_soon(holder)
            group.start_soon(prober)

    anyio.run(main)
    assert probe.started == [1]
    assert took["probe"] < 0.3  # answered while the one slot was still held (0.5 s)


def test_no_count_means_no_limit() -> None:
    slots = CallSlots(None)
    work = Recorder(hold=0.2)

    async def main() -> None:
        async def one(n: int) -> None:
            with within(10.0, slots):
                await run_bounded(work, n)

        async with anyio.create_task_group() as group:
            for n in range(6):
                group.start_soon(one, n)

    anyio.run(main)
    assert work.most == 6


def test_one_limiter_per_event_loop() -> None:
    """A test client runs its own loop; a limiter made in an earlier loop is not reused."""
    slots = CallSlots(1)
    made = []

    async def main() -> None:
        made.append(slots.limiter())

    anyio.run(main)
    anyio.run(main)
    assert made[0] is not made[1]


def test_every_surface_of_a_service_shares_its_slots() -> None:
    class Service:
        call_concurrency = 3

    service = Service()
    assert call_slots(service) is call_slots(service)
    assert call_slots(service).count == 3
    assert call_slots(Service()) is not call_slots(service)


@pytest.mark.parametrize("value, workers, share", [(4, 2, 2), (5, 2, 3), (1, 8, 1), (32, 1, 32)])
def test_each_worker_gets_its_share(value: int, workers: int, share: int) -> None:
    assert call_concurrency(value, workers) == share


def test_unset_means_twice_the_cpus() -> None:
    assert call_concurrency(None, 1) == 2 * usable_cpus()


def test_zero_slots_is_refused_with_the_setting_named(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GRAPHSVC_NEO4J_CONCURRENCY", "0")
    with pytest.raises(ValueError, match="graphsvc_neo4j_concurrency"):
        Settings()
    with pytest.raises(ValueError, match="at least 1"):
        CallSlots(0)
