"""Settings from the environment (SPEC §7), with the defaults documented in docs/operations.md
("Configuration").

Credentials are held as `SecretStr` so that a stray `repr()` in a log line can never
print them.
"""

from __future__ import annotations

import os
from functools import lru_cache

from pydantic import Field, SecretStr, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

LOCAL_BOLT_URI = "bolt://127.0.0.1:7687"
LOCAL_USER = "neo4j"
LOCAL_PASSWORD = "graphsvc-local-password"
#: The names both `logging` (upper-cased) and uvicorn (lower-cased) understand.
LOG_LEVELS = ("critical", "error", "warning", "info", "debug")
#: The most workers a GRAPHSVC_WORKERS / --workers value may ask for.
MAX_WORKERS = 64
#: The most workers `auto` picks: the workers share GRAPHSVC_MAX_INFLIGHT (32 by default), so past 8
#: each would admit 4 requests or fewer, while each costs an interpreter, a driver pool and a warm-up.
AUTO_WORKERS_CAP = 8


#: cgroup v2's CPU quota of this process's group: "max <period>" or "<quota> <period>" (microseconds).
CGROUP_CPU_MAX = "/sys/fs/cgroup/cpu.max"


def cpu_quota(path: str = CGROUP_CPU_MAX) -> int | None:
    """Whole CPUs a cgroup v2 quota allows (`docker run --cpus`, a Kubernetes limit), rounded up; None if unlimited."""
    try:
        with open(path, encoding="ascii") as limits:
            quota, period = limits.read().split()[:2]
        return None if quota == "max" else max(1, -(-int(quota) // int(period)))
    except (OSError, ValueError):
        return None


def usable_cpus() -> int:
    """The CPUs this process may use: its affinity mask (a cpuset), capped by a cgroup CPU quota; at least 1."""
    try:
        cpus = len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        cpus = os.cpu_count() or 1
    quota = cpu_quota()
    return max(1, min(cpus, quota) if quota else cpus)


def worker_share(service_limit: int, workers: int) -> int:
    """One of `workers` processes' share of a service-wide limit, so that together they allow ~`service_limit`."""
    return max(1, -(-service_limit // workers))


def call_concurrency(value: int | None, workers: int) -> int:
    """One worker's share of GRAPHSVC_NEO4J_CONCURRENCY; unset: twice the CPUs this process may use.

    Twice the CPUs: a call spends part of its time in the service and on the wire, not in Neo4j, so a
    core per call would leave Neo4j idle between them. Measured on the 2-core machine with Neo4j beside
    the service (bench/RESULTS.md, "Calls in line"): 4 (2 per worker) kept the cores busy with no 503s.
    """
    return worker_share(value if value is not None else 2 * usable_cpus(), workers)


def worker_count(value: int | str) -> int:
    """A worker count from `auto` (one per usable CPU, at most AUTO_WORKERS_CAP) or a number 1..MAX_WORKERS.

    Measured on the 2-core machine (bench/RESULTS.md, "Many agents at once"): one worker is bound by
    its own GIL while Neo4j has a core to spare; two workers served 1.65x its packs at 16 clients.
    """
    text = str(value).strip().lower()
    if text == "auto":
        return min(usable_cpus(), AUTO_WORKERS_CAP)
    try:
        count = int(text)
    except ValueError:
        raise ValueError(f"'{value}' is not a worker count; use a whole number 1..{MAX_WORKERS} or auto") from None
    if not 1 <= count <= MAX_WORKERS:
        raise ValueError(f"{count} workers is out of range; use 1..{MAX_WORKERS} or auto")
    return count


class InvalidNeo4jUri(ValueError):
    """NEO4J_URI is not a URI the driver accepts (raised by db.Database); the message never carries its userinfo."""


class Settings(BaseSettings):
    """Everything the service reads from its environment."""

    model_config = SettingsConfigDict(env_prefix="", case_sensitive=False, extra="ignore")

    neo4j_uri: str = Field(default=LOCAL_BOLT_URI, description="Bolt URI; default is the local Neo4j.")
    neo4j_user: str = Field(default=LOCAL_USER)
    neo4j_password: SecretStr = Field(default=SecretStr(LOCAL_PASSWORD))
    neo4j_database: str = Field(default="neo4j")
    graphsvc_host: str = Field(default="127.0.0.1")
    graphsvc_port: int = Field(default=8080, ge=1, le=65535)
    graphsvc_api_token: SecretStr | None = Field(default=None)
    graphsvc_log_level: str = Field(default="info")
    # Seconds a request may wait for Neo4j before the service answers 503.
    graphsvc_neo4j_timeout: float = Field(default=2.0, gt=0)
    # `text` (human) or `json` (one object per line, for log shippers); both carry the request id.
    graphsvc_log_format: str = Field(default="text")
    # Seconds an idempotency key (and the result stored with it) is kept: 24 h.
    graphsvc_idempotency_ttl: float = Field(default=86400.0, gt=0)
    # When set, GET /metrics needs this bearer token instead of GRAPHSVC_API_TOKEN (for scrapers).
    graphsvc_metrics_token: SecretStr | None = Field(default=None)
    # Seconds one Neo4j transaction may run (the driver's transaction timeout, enforced by Neo4j);
    # with the connection bound above it caps every wait: GRAPHSVC_NEO4J_TIMEOUT + this.
    graphsvc_query_timeout: float = Field(default=5.0, gt=0)
    # Worker processes `graphsvc serve` starts (uvicorn's supervisor); each is stateless.
    # `auto`: one per usable CPU, at most AUTO_WORKERS_CAP (what `make up` and compose use).
    graphsvc_workers: int = Field(default=1)
    # Requests the service lets wait on Neo4j at once, shared by its workers (each admits
    # ceil(this / workers)); beyond it a fast 503 + Retry-After.
    graphsvc_max_inflight: int = Field(default=32, ge=1)
    # Calls the service runs on Neo4j at once, shared by its workers; the others wait their turn within
    # their bound (graphsvc.surfaces.deadline.CallSlots). Unset: twice the usable CPUs (call_concurrency).
    graphsvc_neo4j_concurrency: int | None = Field(default=None, ge=1)
    # Seconds a stopping worker (SIGTERM, SIGINT) lets in-flight requests finish after it stopped
    # accepting connections; then the rest are cut off and the Neo4j driver is closed.
    graphsvc_shutdown_grace_s: float = Field(default=10.0, ge=0)
    # Turn auth on with API keys only (docs/keys.md), even when GRAPHSVC_API_TOKEN is not set.
    graphsvc_require_keys: bool = Field(default=False)
    # Requests ONE API key may have waiting on Neo4j at once, shared by the workers like
    # GRAPHSVC_MAX_INFLIGHT; unset: a quarter of GRAPHSVC_MAX_INFLIGHT (at least 1).
    graphsvc_key_max_inflight: int | None = Field(default=None, ge=1)

    @field_validator("graphsvc_log_level")
    @classmethod
    def _known_log_level(cls, value: str) -> str:
        """A typo must fail at start-up, not inside logging.basicConfig or uvicorn later."""
        level = value.strip().lower()
        if level not in LOG_LEVELS:
            raise ValueError(f"'{value}' is not a log level; use one of {', '.join(LOG_LEVELS)}")
        return level

    @field_validator("graphsvc_workers", mode="before")
    @classmethod
    def _worker_count(cls, value: int | str) -> int:
        return worker_count(value)

    @field_validator("graphsvc_log_format")
    @classmethod
    def _known_log_format(cls, value: str) -> str:
        fmt = value.strip().lower()
        if fmt not in ("text", "json"):
            raise ValueError(f"'{value}' is not a log format; use text or json")
        return fmt


@lru_cache(maxsize=1)
def get_settings() -> Settings:
    return Settings()
