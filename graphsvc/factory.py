"""Build the one service object from the environment (shared by serve, mcp and the CLI)."""

from __future__ import annotations

from datetime import timedelta

from graphsvc.clock import system_clock
from graphsvc.config import Settings, call_concurrency, get_settings
from graphsvc.logs import configure_logging
from graphsvc.store.db import Database
from graphsvc.service import GraphService


def build_service(settings: Settings | None = None) -> GraphService:
    settings = settings or get_settings()
    configure_logging(settings.graphsvc_log_level, settings.graphsvc_log_format)
    return GraphService(Database.from_settings(settings), clock=system_clock,
                        idempotency_ttl=timedelta(seconds=settings.graphsvc_idempotency_ttl),
                        call_concurrency=call_concurrency(settings.graphsvc_neo4j_concurrency,
                                                          settings.graphsvc_workers))
