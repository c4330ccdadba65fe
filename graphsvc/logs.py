"""Log set-up for every process: request ids on every line, text or one JSON object per line.

`configure_logging` installs ONE root handler; uvicorn is started with `log_config=None`
so its own loggers propagate here too and share the format. The request-id filter sits on
the handler (not on a logger), so every record that reaches it — graphsvc's, uvicorn's,
the driver's — carries `request_id` ("-" outside a request).

GRAPHSVC_LOG_FORMAT=json writes `{"ts", "level", "logger", "message", "request_id", ...}`
per line; fields a caller passes as `extra={"http": {...}}` (the access log) are kept.
"""

from __future__ import annotations

import json
import logging
import sys
from datetime import datetime, timezone
from typing import Any

from graphsvc.request_context import current_request_id

LOG_FORMATS = ("text", "json")
TEXT_FORMAT = "%(asctime)s %(levelname)s %(name)s [%(request_id)s]: %(message)s"
#: The structured fields the JSON formatter copies from a record when present.
EXTRA_FIELDS = ("http",)


class RequestIdFilter(logging.Filter):
    """Adds `record.request_id` (the current request's id, or "-")."""

    def filter(self, record: logging.LogRecord) -> bool:
        if not hasattr(record, "request_id"):
            record.request_id = current_request_id.get() or "-"
        return True


class JsonFormatter(logging.Formatter):
    """One compact JSON object per line; exceptions travel as a string field, never as extra lines."""

    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, Any] = {
            "ts": datetime.fromtimestamp(record.created, tz=timezone.utc).isoformat(timespec="milliseconds"),
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": record.getMessage(),
            "request_id": getattr(record, "request_id", None) or "-",
        }
        for name in EXTRA_FIELDS:
            if hasattr(record, name):
                entry[name] = getattr(record, name)
        if record.exc_info:
            entry["exception"] = self.formatException(record.exc_info)
        return json.dumps(entry, ensure_ascii=False, default=str)


#: Loggers whose INFO lines repeat what the access log says, per request.
QUIETER_AT_INFO = ("mcp.server.streamable_http", "mcp.server.streamable_http_manager")


def configure_logging(level: str = "info", fmt: str = "text") -> None:
    """Install (or replace) graphsvc's one stderr handler on the root logger, in the chosen format."""
    handler = logging.StreamHandler(sys.stderr)
    handler.addFilter(RequestIdFilter())
    handler.setFormatter(JsonFormatter() if fmt == "json" else logging.Formatter(TEXT_FORMAT))
    handler.graphsvc = True  # type: ignore[attr-defined]  # ours, replaced on the next call
    root = logging.getLogger()
    for old in [h for h in root.handlers if getattr(h, "graphsvc", False)]:
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(level.upper())
    # The MCP SDK's stateless transport says "Terminating session: None" at INFO for every POST, and
    # the access log already has a line per request: at info that would double every MCP line.
    quiet = logging.getLevelName(level.upper()) == logging.INFO
    for name in QUIETER_AT_INFO:
        logging.getLogger(name).setLevel(logging.WARNING if quiet else logging.NOTSET)
