"""Integration-test set-up shared by every module in this directory."""

from __future__ import annotations

import schemathesis

# /openapi.json documents export/import as JSON Lines (application/x-ndjson), a media type
# schemathesis has no serializer for; the fuzzed body is a string, so send it as text bytes.
schemathesis.serializer.alias("application/x-ndjson", "text/plain")
