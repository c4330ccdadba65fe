"""Healthy when Neo4j answers a real query (RETURN 1) over its HTTP transaction API."""

import base64
import json
import os
import sys
import urllib.request

address = os.environ.get("NEO4J_server_http_listen__address", ":7474")
host, _, port = address.rpartition(":")
host = host if host and host != "0.0.0.0" else "127.0.0.1"
auth = os.environ.get("NEO4J_AUTH", "")
request = urllib.request.Request(
    f"http://{host}:{port or 7474}/db/neo4j/tx/commit",
    data=json.dumps({"statements": [{"statement": "RETURN 1"}]}).encode(),
    headers={"Content-Type": "application/json", "Accept": "application/json"},
)
if auth and auth != "none":
    request.add_header("Authorization", "Basic " + base64.b64encode(auth.replace("/", ":", 1).encode()).decode())
try:
    with urllib.request.urlopen(request, timeout=4) as response:
        body = json.load(response)
    sys.exit(0 if not body.get("errors") else 1)
except Exception:
    sys.exit(1)
