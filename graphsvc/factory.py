"""Build the one service object from the environment (shared by serve, mcp and the CLI)."""

from __future__ import annotations

import logging

from graphsvc.clock import system_clock
from graphsvc.config import Settings, get_settings
from graphsvc.store.db import Database
from graphsvc.service import GraphService


def build_service(settings: Settings | None = None) -> GraphService:
    settings = settings or get_settings()
    logging.basicConfig(level=settings.graphsvc_log_level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    return GraphService(Database.from_settings(settings), clock=system_clock)
