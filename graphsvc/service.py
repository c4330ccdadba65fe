"""The one service object every surface (HTTP, MCP, CLI) shares.

Surfaces hand it raw JSON-like data; it validates with the pydantic models,
reads the clock ONCE per call, and delegates to the store (I/O) or the
bootstrap reader + pure pack assembly. Surfaces therefore stay thin and can
never disagree about a rule.
"""

from __future__ import annotations

import functools
import logging
import threading
from concurrent.futures import ThreadPoolExecutor
from contextvars import ContextVar
from datetime import datetime, timedelta
from typing import Any, Callable, Iterable, Iterator

from graphsvc import telemetry
from graphsvc.access import principal
from graphsvc.clock import Clock, system_clock
from graphsvc.core.apikeys import KEY_ID
from graphsvc.keyring import KeyRing
from graphsvc.store.db import Database
from graphsvc.store.idempotency import DEFAULT_TTL, IdempotencyKey, Replayed, Wrap, check, guard, purge_expired
from graphsvc.errors import BadRequest, Conflict, InvalidInput, Unavailable
from graphsvc.models import BootstrapRequest, CapsuleIn, CapsuleUpdate, IngestBatch, KeyCreate, RelateRequest
from graphsvc.validation import parse


log = logging.getLogger(__name__)


def _as_is(result: Any) -> Any:
    return result


#: The packs whose plans `warm` caches: one per pack statement (whole store, fenced). Each statement
#: has one plan whatever the request (graphsvc.store.db.statement_arguments); budget 0 renders nothing.
WARM_REQUESTS: tuple[dict[str, Any], ...] = (
    {"token_budget": 0},
    {"token_budget": 0, "project_id": "graphsvc-warm", "terms": ["warm"]},
)


#: The right each service operation needs (graphsvc.access): filled by `operation`, one entry per
#: operation a surface may call. tests/unit/test_operations.py holds every public method to it.
OPERATION_RIGHTS: dict[str, str] = {}


def operation(right: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Declare a service operation and the right it needs: the calling principal
    (graphsvc.access.current_principal, set by the surface) is checked here, before the operation
    runs, for every surface alike. The operation itself applies the principal's scope to what it
    reads or writes (`Principal.fence`, `covers`, `check_write`)."""
    def declare(method: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(method)
        def checked(self: Any, *args: Any, **kwargs: Any) -> Any:
            principal().require(right, method.__name__)
            return method(self, *args, **kwargs)

        OPERATION_RIGHTS[method.__name__] = right
        checked.required_right = right  # type: ignore[attr-defined]
        return checked
    return declare


#: Set in the warm-up's own calls, which must pass the warming gate in `bootstrap`.
_warming_call: ContextVar[bool] = ContextVar("graphsvc_warming_call", default=False)


class GraphService:
    def __init__(self, db: Database, clock: Clock = system_clock, idempotency_ttl: timedelta = DEFAULT_TTL):
        self.db = db
        self.clock = clock
        self.idempotency_ttl = idempotency_ttl
        self._schema_applied = False
        self._schema_lock = threading.Lock()
        self._plans_warm = False  # set by `warm`; `ready` waits for it
        self.keys = KeyRing(db, clock)  # resolves API keys to principals (the surfaces' auth)
        # A restarted Neo4j has an empty plan cache: plan the writes again too, not only the packs.
        db.on_reconnect = lambda: self.warm(writes=True)

    def close(self) -> None:
        """Close the Neo4j driver (its pooled connections); the service is not used afterwards."""
        self.db.close()

    @property
    def request_bound(self) -> float:
        """Seconds a surface lets one call wait for Neo4j before it answers 503 (SPEC §6)."""
        return self.db.request_bound

    def warm(self, writes: bool = False) -> None:
        """Plan the pack statements now (seconds each on a cold Neo4j), not on an agent's call; with
        `writes`, every write statement as well (start-up does that in `ensure_schema`).

        The statements are planned side by side: Neo4j plans them on its own cores, so a start-up or
        a reconnect pays about the slowest plan rather than their sum."""
        from graphsvc.store.warmup import warm_write_plans

        def plan(request: dict[str, Any]) -> None:
            token = _warming_call.set(True)
            try:
                with self.db.longer_timeout():
                    self.bootstrap(request)
            finally:
                _warming_call.reset(token)

        with ThreadPoolExecutor(max_workers=len(WARM_REQUESTS) + 1, thread_name_prefix="graphsvc-warm") as pool:
            work = [pool.submit(plan, request) for request in WARM_REQUESTS]
            if writes:
                work.append(pool.submit(warm_write_plans, self.db))
            for done in work:
                done.result()
        self._plans_warm = True

    def ensure_schema(self) -> None:
        """Apply `cypher/schema.cypher`, upgrade the store (`graphsvc migrate`) and plan the writes, once per process.

        Retried on the next call if Neo4j was down. Every read and write passes here first: the
        pack reads, and the writes keep, the state of the current schema version.
        """
        if self._schema_applied:
            return
        with self._schema_lock:
            if not self._schema_applied:
                from graphsvc.store.migrate import migrate

                from graphsvc.store.warmup import warm_write_plans

                self.db.apply_schema()
                done = migrate(self.db)
                warm_write_plans(self.db)  # the first write after a start must not pay seconds of planning
                if done["capsules"]:
                    log.info("migrated the store from schema v%s to v%s (%s capsules)",
                             done["from"], done["to"], done["capsules"])
                self._schema_applied = True

    def ready(self) -> bool:
        """Ready to serve: Neo4j answers, the schema is in place, and the pack's plans are warm.

        A load balancer, compose's healthcheck or `make up` sends agents only to a worker that says
        so; a cold worker would have its first packs plan the statements (seconds each on a fresh
        Neo4j) under the request timeout. After a Neo4j restart the warm-up runs again in the
        background (Database.on_reconnect) and this answers False until it is done.
        """
        if not self.db.ping():
            return False
        self.ensure_schema()
        if self.db.warming:
            return False
        if not self._plans_warm:  # the start-up warm-up found Neo4j down: warm now, off this call
            self.db.rewarm()
            return False
        return True

    def _refuse_while_warming(self) -> None:
        """After a reconnect every call would wait for the cold plans its statements need, each cut off
        by the query timeout while they crowd a server that is compiling; one warm-up compiles them
        instead, and callers get a fast 503 + Retry-After until it is done (seconds, not a 30 s wait)."""
        if self.db.warming and not _warming_call.get():
            raise Unavailable("Neo4j is back and the query plans are being compiled; retry shortly.")

    # -- the product ------------------------------------------------------

    @operation("read")
    def bootstrap(self, data: Any) -> dict[str, Any]:
        """SPEC §4: the cold-start pack. Bad input → 400 naming the field. A scoped key's pack is
        fenced to its scope (docs/keys.md); a fence outside it is a 403."""
        from graphsvc.store.bootstrap import build_pack

        request = parse(BootstrapRequest, data if data is not None else {}, BadRequest)
        scope = principal().fence(request.project_id, request.project_prefix)
        self.ensure_schema()
        self._refuse_while_warming()
        pack = build_pack(self.db, request, self.clock(), scope)
        telemetry.observe_pack(pack)
        return pack

    # -- writes (SPEC §5) -------------------------------------------------
    # Each takes an optional idempotency key (SPEC §5): see graphsvc.store.idempotency.

    def _once(self, key: IdempotencyKey | None, operation: str, request: Any, now: datetime,
              write: Callable[[Wrap | None], Any], render: Callable[[Any], Any] = _as_is) -> Any:
        """Run `write` (a store call taking a wrap); with a key, replay or record in the same transaction."""
        self.ensure_schema()
        self._refuse_while_warming()
        if key is None:
            return render(write(None))
        try:
            body = render(write(guard(key.claim(operation, request, now, self.idempotency_ttl), render)))
        except Replayed as replay:
            return self._replayed(key, operation, replay)
        purge_expired(self.db, now)
        return body

    def _replayed(self, key: IdempotencyKey, operation: str, replay: Replayed) -> Any:
        # The retrying caller lost the first answer and its bookmark: hand it one that covers the
        # stored write, so its next read still sees that write on any worker or cluster member.
        self.db.observe_bookmark()
        key.replayed, key.status = True, replay.status
        telemetry.IDEMPOTENT_REPLAYS.labels(operation=operation).inc()
        return replay.body

    @operation("write")
    def ingest(self, data: Any, idempotency: IdempotencyKey | None = None) -> dict[str, Any]:
        """One capsule, or `{"items": [...]}` (≤ 1000) all-or-nothing; a project outside the key's scope is a 403."""
        from graphsvc.store.ingest import ingest

        batch = isinstance(data, dict) and "items" in data
        items = parse(IngestBatch, data, InvalidInput).items if batch else [parse(CapsuleIn, data, InvalidInput)]
        caller = principal()
        for index, item in enumerate(items):
            caller.check_write(item.project_id, f"items[{index}].project_id" if batch else "project_id")
        now = self.clock()
        return self._once(idempotency, "ingest", data, now,
                          lambda wrap: ingest(self.db, items, now, batch=batch, wrap=wrap, visible=caller.covers,
                                              provenance=caller.provenance()),
                          render=lambda ids: {"ids": ids})

    # For relate, update and tombstone a capsule outside a scoped key's scope is answered exactly
    # as an unknown id (docs/keys.md): `visible` makes the store's lookups treat it so.

    @operation("write")
    def relate(self, data: Any, idempotency: IdempotencyKey | None = None) -> dict[str, Any]:
        from graphsvc.store.relate import relate

        req, now, visible = parse(RelateRequest, data, InvalidInput), self.clock(), principal().covers
        return self._once(idempotency, "relate", data, now,
                          lambda wrap: relate(self.db, req, now, wrap=wrap, visible=visible))

    @operation("write")
    def update(self, capsule_id: str, data: Any, idempotency: IdempotencyKey | None = None) -> dict[str, Any]:
        from graphsvc.store.update import update

        upd, now, caller = parse(CapsuleUpdate, data, InvalidInput), self.clock(), principal()
        return self._once(idempotency, "update", {"id": capsule_id, "changes": data}, now,
                          lambda wrap: update(self.db, capsule_id, upd, now, wrap=wrap, visible=caller.covers,
                                              provenance=caller.provenance()))

    @operation("write")
    def tombstone(self, capsule_ids: list[str], idempotency: IdempotencyKey | None = None) -> dict[str, Any]:
        from graphsvc.store.tombstone import tombstone

        now, visible = self.clock(), principal().covers
        return self._once(idempotency, "tombstone", {"ids": capsule_ids}, now,
                          lambda wrap: tombstone(self.db, capsule_ids, now, wrap=wrap, visible=visible))

    # -- reads (SPEC §5) --------------------------------------------------

    @operation("read")
    def get(self, capsule_ids: list[str]) -> dict[str, Any]:
        from graphsvc.store.reads import get_capsules

        return get_capsules(self.db, capsule_ids, self.clock(), visible=principal().covers)

    @operation("read")
    def list(self, data: Any) -> dict[str, Any]:
        from graphsvc.store.reads import list_capsules

        caller = principal()
        return list_capsules(self.db, data, self.clock(), fence=caller.fence, visible=caller.covers)

    # -- API keys (issue 27; docs/keys.md) ----------------------------------

    @operation("admin")
    def keys_create(self, data: Any) -> dict[str, Any]:
        """A new key; the answer's `key` is the only time its secret is shown."""
        from graphsvc.store.keys import create_key

        request = parse(KeyCreate, data if data is not None else {}, InvalidInput)
        self.ensure_schema()
        return create_key(self.db, request.label, request.rights, request.prefixes, self.clock())

    @operation("admin")
    def keys_list(self) -> dict[str, Any]:
        from graphsvc.store.keys import list_keys

        self.ensure_schema()
        return {"keys": list_keys(self.db)}

    @operation("admin")
    def keys_revoke(self, key_id: Any) -> dict[str, Any]:
        """Revoke a key (idempotent); every worker refuses it within a second (graphsvc.keyring)."""
        from graphsvc.store.keys import revoke_key

        if not isinstance(key_id, str) or KEY_ID.fullmatch(key_id) is None:
            raise InvalidInput("id: an API key id is 12 lowercase hex digits (the part after gsk_)", field="id")
        self.ensure_schema()
        return revoke_key(self.db, key_id, self.clock())

    # -- transfer (SPEC §5) -----------------------------------------------

    @operation("admin")
    def export_lines(self) -> Iterator[str]:
        from graphsvc.store.transfer import export_lines

        return export_lines(self.db)

    @operation("admin")
    def import_lines(self, lines: Iterable[str], progress: Any = None,
                     idempotency: IdempotencyKey | None = None) -> dict[str, Any]:
        """All-or-nothing import; with a key, the key is recorded in the import's last transaction.

        An import spans several transactions, so the key is checked before it starts (a retry is
        answered without parsing or the 409 its existing ids would cause), and a concurrent twin
        that loses the race for the ids (409) is answered from the winner's key.
        """
        from graphsvc.store.transfer import import_lines

        self.ensure_schema()
        if idempotency is None:
            return import_lines(self.db, lines, progress=progress)
        lines = list(lines)
        claim = idempotency.claim("import", "\n".join(lines), self.clock(), self.idempotency_ttl)
        try:
            check(self.db, claim)
            try:
                body = import_lines(self.db, lines, progress=progress,
                                    seal=lambda summary: guard(claim, lambda _: summary))
            except Conflict as conflict:
                check(self.db, claim)  # the twin that won may have stored its answer by now
                raise Conflict(
                    f"{conflict.message}. {idempotency.field} '{idempotency.key}': if another import under "
                    "this key is still running, send this one again once it has answered to get its result",
                    field=conflict.field) from None
        except Replayed as replay:
            return self._replayed(idempotency, "import", replay)
        purge_expired(self.db, claim.now)
        return body
