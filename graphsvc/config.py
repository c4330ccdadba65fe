"""Settings from the environment (SPEC §7), with the defaults documented in the README.

Credentials are held as `SecretStr` so that a stray `repr()` in a log line can never
print them.
"""

from __future__ import annotations

from functools import lru_cache

from pydantic import Field, SecretStr, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

LOCAL_BOLT_URI = "bolt://127.0.0.1:7687"
LOCAL_USER = "neo4j"
LOCAL_PASSWORD = "graphsvc-local-password"
#: The names both `logging` (upper-cased) and uvicorn (lower-cased) understand.
LOG_LEVELS = ("critical", "error", "warning", "info", "debug")


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
    graphsvc_workers: int = Field(default=1, ge=1, le=64)
    # Requests per process allowed to wait on Neo4j at once; beyond it a fast 503 + Retry-After.
    graphsvc_max_inflight: int = Field(default=32, ge=1)

    @field_validator("graphsvc_log_level")
    @classmethod
    def _known_log_level(cls, value: str) -> str:
        """A typo must fail at start-up, not inside logging.basicConfig or uvicorn later."""
        level = value.strip().lower()
        if level not in LOG_LEVELS:
            raise ValueError(f"'{value}' is not a log level; use one of {', '.join(LOG_LEVELS)}")
        return level

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
