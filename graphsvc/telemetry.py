"""Prometheus metrics: what an operator needs to see the service working (docs/operations.md, "Operating it").

Defined once here, at import, on prometheus_client's default registry, so any layer can
count without passing a registry around. Single process: `render()` exposes the default
registry (plus the client's process/GC collectors). With `PROMETHEUS_MULTIPROC_DIR` set
(several uvicorn workers), prometheus_client keeps every value in per-process files in
that directory and `render()` merges them with a `MultiProcessCollector`; gauges say how
to merge (`livesum`: only live workers count). The directory must exist and be empty
when the service starts; a worker that exits normally removes its live gauges.

Label values are bounded: routes are templates (`/v1/capsules/{capsule_id}`), never raw
paths; an unknown path is `<unmatched>`; methods outside the HTTP set are `OTHER`.
"""

from __future__ import annotations

import atexit
import os
from contextlib import contextmanager
from typing import Any, Iterator

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, Counter, Gauge, Histogram, generate_latest

MULTIPROC_DIR = os.environ.get("PROMETHEUS_MULTIPROC_DIR") or os.environ.get("prometheus_multiproc_dir")
CONTENT_TYPE = CONTENT_TYPE_LATEST

#: Seconds; from a cached read (~ms) to the 503 deadline and a large import.
LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)

HTTP_REQUESTS = Counter(
    "graphsvc_http_requests_total", "HTTP requests answered, by method, route template and status",
    ("method", "route", "status"))
HTTP_LATENCY = Histogram(
    "graphsvc_http_request_duration_seconds", "Time from request start to the last response byte",
    ("method", "route", "status"), buckets=LATENCY_BUCKETS)
HTTP_IN_FLIGHT = Gauge(
    "graphsvc_http_requests_in_flight", "HTTP requests being served now", multiprocess_mode="livesum")
PACKS = Counter(
    "graphsvc_packs_total", "memory_bootstrap packs built, by the state of their ready section "
    "(next_action, nothing_ready, cycle, or empty for token_budget 0)", ("ready_state",))
PACK_ROWS_TRIMMED = Counter(
    "graphsvc_pack_rows_trimmed_total", "Content rows the token budget trimmed from packs")
NEO4J_ERRORS = Counter(
    "graphsvc_neo4j_errors_total", "Errors the Neo4j driver raised, by exception class", ("error",))
UNAVAILABLE = Counter(
    "graphsvc_unavailable_total", "Requests answered 'Neo4j unavailable' (HTTP 503 / the MCP tool error)",
    ("surface",))
NEO4J_IN_FLIGHT = Gauge(
    "graphsvc_neo4j_work_in_flight", "Neo4j units of work running now; each holds one pooled connection "
    "(the driver does not expose its pool), so this is the connections in use", multiprocess_mode="livesum")
CALLS_IN_LINE = Gauge(
    "graphsvc_calls_in_line", "Service calls waiting now for a call slot (GRAPHSVC_NEO4J_CONCURRENCY)",
    multiprocess_mode="livesum")
CALL_SLOT_WAIT = Histogram(
    "graphsvc_call_slot_wait_seconds", "Time a service call waited in line for its call slot",
    buckets=LATENCY_BUCKETS)
IDEMPOTENT_REPLAYS = Counter(
    "graphsvc_idempotent_replays_total", "Writes answered from a stored idempotency key, by operation",
    ("operation",))

WATCHERS = Gauge(
    "graphsvc_watchers", "Watches (POST .../watch, SPEC §13) waiting now", multiprocess_mode="livesum")
WATCH_POLLS = Counter(
    "graphsvc_watch_polls_total", "Reads of the change markers by the watchers' poller (one per interval while "
    "watches wait)")
WATCH_PACKS = Counter(
    "graphsvc_watch_packs_total", "Packs computed by watches, by pack (bootstrap, digest): one when a watch "
    "starts, one per wake-up by a write in its scope or an expiry", ("pack",))
WATCH_ANSWERS = Counter(
    "graphsvc_watch_answers_total", "Watches answered, by outcome (changed: 200 with a new pack; not_modified: "
    "304 after wait_s)", ("outcome",))


@contextmanager
def neo4j_work() -> Iterator[None]:
    """Count one unit of Neo4j work in flight, and the driver's errors by class."""
    from neo4j.exceptions import DriverError, Neo4jError

    NEO4J_IN_FLIGHT.inc()
    try:
        yield
    except (Neo4jError, DriverError, OSError) as exc:
        NEO4J_ERRORS.labels(error=type(exc).__name__).inc()
        raise
    finally:
        NEO4J_IN_FLIGHT.dec()


def observe_pack(pack: dict[str, Any]) -> None:
    """Count a built pack by its ready state and the rows its budget trimmed."""
    ready = pack.get("ready")
    state = ready.get("state", "unknown") if isinstance(ready, dict) else "empty"
    PACKS.labels(ready_state=state).inc()
    trimmed = (pack.get("budget") or {}).get("trimmed_by_budget", 0)
    if isinstance(trimmed, int) and trimmed > 0:
        PACK_ROWS_TRIMMED.inc(trimmed)


def render() -> bytes:
    """The exposition text: this process's metrics, or every worker's in multiprocess mode."""
    if MULTIPROC_DIR:
        from prometheus_client import multiprocess

        registry = CollectorRegistry()
        multiprocess.MultiProcessCollector(registry)
        return generate_latest(registry)
    from prometheus_client import REGISTRY

    return generate_latest(REGISTRY)


def forget_this_process() -> None:
    """Multiprocess mode: drop this worker's live gauges (its counters keep counting in the total).

    Called when the app shuts down, and at exit as a fallback (uvicorn re-raises SIGTERM after
    its shutdown, which skips atexit).
    """
    if MULTIPROC_DIR:
        from prometheus_client import multiprocess

        multiprocess.mark_process_dead(os.getpid())


if MULTIPROC_DIR:
    atexit.register(forget_this_process)
