"""Integration-test set-up shared by every module in this directory."""

from __future__ import annotations

import pytest
import schemathesis

from graphsvc.service import GraphService
from tests.integration.service_support import NOW, Clock

# /openapi.json documents export/import as JSON Lines (application/x-ndjson), a media type
# schemathesis has no serializer for; the fuzzed body is a string, so send it as text bytes.
schemathesis.serializer.alias("application/x-ndjson", "text/plain")


@pytest.fixture
def clock() -> Clock:
    """A settable clock at NOW (tests.integration.service_support)."""
    return Clock(NOW)


@pytest.fixture
def svc(db, clock) -> GraphService:
    """The service over an empty database on `clock`; a module's own `svc` may build on it (seed a store)."""
    return GraphService(db, clock=clock)
