"""`graphsvc demo`: load the sample `shop` project once, then print its cold-start pack.

Without `--url` it works through the service object directly (Neo4j from the
environment); with `--url` it goes through a running HTTP service, exactly as an
agent would (`make demo` does that after `make up`). Loading is idempotent: it
writes only into an empty `shop` subtree, says "already loaded" once the whole
sample is there, and otherwise (a load that failed part-way, or capsules of
your own) writes nothing and says what it found. `--reset` first deletes
the `shop` subtree (and only it) straight in Neo4j, because the API itself
never deletes (tombstones only mark).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
import uuid
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol

from graphsvc.demo_data import CAPSULES, DEMO_PREFIX, DEMO_TERMS, ingest_item, ingest_waves
from graphsvc.errors import ServiceError


class DemoTarget(Protocol):
    """What the demo needs; GraphService has it, and so does HttpTarget."""

    def ingest(self, data: Any) -> dict[str, Any]: ...
    def list(self, data: Any) -> dict[str, Any]: ...
    def bootstrap(self, data: Any) -> dict[str, Any]: ...


class ServiceAnswered(ServiceError):
    """A non-2xx answer from the HTTP service, carrying its status and error body."""

    def __init__(self, status: int, body: dict[str, Any], where: str, retry_after: float = 1.0):
        error = body.get("error", {}) if isinstance(body, dict) else {}
        super().__init__(f"{where} answered {status}: {error.get('message', body)}", field=error.get("field"))
        self.status = status
        self.retry_after = retry_after


class HttpTarget:
    """The demo's three calls over the service's JSON API (stdlib only; bearer token from the env)."""

    def __init__(self, base_url: str, token: str | None = None, timeout: float = 30.0, patience: float = 60.0):
        self.base_url = base_url.rstrip("/")
        self.token = token
        self.timeout = timeout
        #: Seconds a call keeps retrying 503s: with several workers, `/readyz` 200 from one of them does
        #: not mean the one answering the next call has finished its start-up.
        self.patience = patience

    def _call(self, method: str, path: str, body: Any = None) -> dict[str, Any]:
        """One call, repeated after a 503 as its Retry-After asks (writes under one Idempotency-Key,
        so a repeat never writes twice) for at most `patience` seconds."""
        data = None if body is None else json.dumps(body).encode("utf-8")
        key = uuid.uuid4().hex if method == "POST" else None
        give_up = time.monotonic() + self.patience
        while True:
            try:
                return self._once(method, path, data, key)
            except ServiceAnswered as answered:
                pause = min(answered.retry_after, 5.0)
                if answered.status != 503 or time.monotonic() + pause > give_up:
                    raise
                time.sleep(pause)

    def _once(self, method: str, path: str, data: bytes | None, key: str | None) -> dict[str, Any]:
        request = urllib.request.Request(self.base_url + path, data=data, method=method)
        request.add_header("Accept", "application/json")
        if data is not None:
            request.add_header("Content-Type", "application/json")
        if key is not None:
            request.add_header("Idempotency-Key", key)
        if self.token:
            request.add_header("Authorization", f"Bearer {self.token}")
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as response:
                return json.loads(response.read() or b"{}")
        except urllib.error.HTTPError as exc:
            try:
                answer = json.loads(exc.read() or b"{}")
            except ValueError:
                answer = {}
            retry_after = exc.headers.get("Retry-After", "")
            raise ServiceAnswered(exc.code, answer, f"{method} {path}",
                                  retry_after=float(retry_after) if retry_after.isdigit() else 1.0) from None
        except (urllib.error.URLError, OSError) as exc:
            raise ServiceError(f"cannot reach graphsvc at {self.base_url} ({exc}); start it with `make up`") from None

    def ingest(self, data: Any) -> dict[str, Any]:
        return self._call("POST", "/v1/capsules", data)

    def list(self, data: Any) -> dict[str, Any]:
        return self._call("GET", "/v1/capsules?" + urllib.parse.urlencode(data))

    def bootstrap(self, data: Any) -> dict[str, Any]:
        return self._call("POST", "/v1/memory_bootstrap", data)


@dataclass(frozen=True)
class DemoState:
    """What the demo subtree holds: the sample capsules found there (by key) and how many others."""

    sample: frozenset[str]
    others: int

    @property
    def loaded(self) -> bool:
        """The last wave is stored: waves commit in order, so a load ran to its end."""
        return all(capsule.key in self.sample for capsule in ingest_waves(CAPSULES)[-1])

    @property
    def empty(self) -> bool:
        return not self.sample and not self.others


def demo_state(target: DemoTarget) -> DemoState:
    """Page through the live capsules under the demo prefix, matching the sample on project, kind and content."""
    wanted = {(capsule.project_id, capsule.kind, capsule.content): capsule.key for capsule in CAPSULES}
    sample: set[str] = set()
    others = 0
    request: dict[str, Any] = {"project_prefix": DEMO_PREFIX, "limit": 500}
    while True:
        page = target.list(request)
        for stored in page["capsules"]:
            key = wanted.get((stored["project_id"], stored["kind"], stored["content"]))
            if key is None:
                others += 1
            else:
                sample.add(key)
        if not page.get("next_cursor"):
            return DemoState(frozenset(sample), others)
        request = {**request, "cursor": page["next_cursor"]}


def demo_is_loaded(target: DemoTarget) -> bool:
    return demo_state(target).loaded


def load_demo(target: DemoTarget, now: datetime) -> list[str]:
    """Ingest the sample project wave by wave (each wave one all-or-nothing batch); the new ids."""
    ids: dict[str, str] = {}
    for wave in ingest_waves(CAPSULES):
        assigned = target.ingest({"items": [ingest_item(capsule, ids, now) for capsule in wave]})["ids"]
        ids.update(zip((capsule.key for capsule in wave), assigned))
    return list(ids.values())


def reset_demo(db: Any) -> int:
    """Delete every capsule under the demo prefix (and its edges); the number deleted."""
    from graphsvc.store.maintain import delete_project_tree

    return db.write(lambda tx: delete_project_tree(tx, DEMO_PREFIX))


def pack_request() -> dict[str, Any]:
    return {"project_prefix": DEMO_PREFIX, "terms": list(DEMO_TERMS)}


def browser_hint(neo4j_uri: str) -> str:
    """Where to look at the graph, without ever printing credentials from the URI."""
    from graphsvc.neo4j_local import LocalNeo4j

    for instance in ("dev", "test"):
        local = LocalNeo4j.named(instance)
        if local.bolt_uri == neo4j_uri:
            return f"Neo4j Browser at {local.browser_url} (user neo4j)"
    parts = urllib.parse.urlsplit(neo4j_uri)
    return f"the Neo4j Browser of the server at {parts.scheme}://{parts.hostname}:{parts.port or 7687}"


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser("demo", help="load the sample 'shop' project (once) and print its cold-start pack")
    parser.add_argument("--url", default=None,
                        help="go through a running graphsvc HTTP service (e.g. http://127.0.0.1:8080) "
                        "instead of talking to Neo4j directly")
    parser.add_argument("--reset", action="store_true",
                        help="delete the 'shop' project subtree first (only it), then load it again")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from graphsvc.clock import system_clock
    from graphsvc.core.canonical import canonical_json
    from graphsvc.surfaces.commands.bootstrap import budget_note
    from graphsvc.config import get_settings
    from graphsvc.store.db import Database
    from graphsvc.factory import build_service
    from graphsvc.surfaces.http.auth import configured_token

    settings = get_settings()
    service = build_service(settings) if args.url is None else None
    target: DemoTarget = service or HttpTarget(args.url, configured_token(settings.graphsvc_api_token))
    # An operator's one-shot command, often the first thing a freshly started Neo4j sees: each of its
    # statements is planned cold (seconds on a busy machine), which a request's 5 s timeout would cut.
    bound = service.db.longer_timeout() if service is not None else contextlib.nullcontext()
    try:
        with bound:
            if args.reset:
                db = service.db if service else Database.from_settings(settings)
                try:
                    print(f"Deleted {reset_demo(db)} capsules of project '{DEMO_PREFIX}' and its sub-projects.",
                          file=sys.stderr)
                finally:
                    if service is None:
                        db.close()
            state = demo_state(target)
            if state.loaded:
                print(f"The demo project '{DEMO_PREFIX}' is already loaded; nothing written "
                      f"(--reset reloads it).", file=sys.stderr)
            elif state.empty:
                ids = load_demo(target, service.clock() if service else system_clock())
                print(f"Loaded the demo project '{DEMO_PREFIX}': {len(ids)} capsules ({ids[0]}..{ids[-1]}).",
                      file=sys.stderr)
            else:
                print(f"Project '{DEMO_PREFIX}' holds {len(state.sample)} of the {len(CAPSULES)} sample capsules and "
                      f"{state.others} other live capsule(s), not a whole sample (a load that failed part-way, or "
                      f"capsules of your own); nothing written. --reset deletes the '{DEMO_PREFIX}' subtree and loads "
                      "the sample.", file=sys.stderr)
            pack = target.bootstrap(pack_request())
    finally:
        if service is not None:
            service.db.close()
    via = args.url or "the service object"
    print(f"memory_bootstrap pack for project_prefix '{DEMO_PREFIX}' with terms {', '.join(DEMO_TERMS)} "
          f"(via {via}); to see the graph, open {browser_hint(settings.neo4j_uri)} and run "
          f"cypher/inspect/project_graph.cypher after :param project_prefix => '{DEMO_PREFIX}'")
    print(json.dumps(pack, ensure_ascii=False, indent=2))
    sys.stdout.flush()
    print(budget_note(pack, canonical_json(pack)), file=sys.stderr)  # used_tokens counts the compact body
    return 0
