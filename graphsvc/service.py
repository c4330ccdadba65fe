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
import time
from concurrent.futures import ThreadPoolExecutor
from contextvars import ContextVar
from datetime import datetime, timedelta
from typing import Any, Callable, Iterator

from graphsvc import telemetry
from graphsvc.access import principal
from graphsvc.clock import Clock, system_clock
from graphsvc.core.watch_scope import WatchScope
from graphsvc.core.apikeys import KEY_ID
from graphsvc.keyring import KeyRing
from graphsvc.request_context import call_deadline
from graphsvc.store.db import MAINTENANCE_TIMEOUT, Database
from graphsvc.store.idempotency import DEFAULT_TTL, IdempotencyKey, Replayed, Wrap, check, guard, purge_expired
from graphsvc.errors import BadRequest, Conflict, Forbidden, InvalidInput, Unavailable
from graphsvc.models import (
    AliasListRequest, AliasRequest, BootstrapRequest, ClaimRequest, DigestRequest, CapsuleIn, CapsuleUpdate,
    IngestBatch, KeyCreate, RelateRequest, ReleaseRequest, RetrieveRequest, SessionFinish, SessionStart,
)
from graphsvc.validation import parse
from graphsvc.watch import Watch
from graphsvc.watch_models import BootstrapWatchRequest, DigestWatchRequest, WatchFields


log = logging.getLogger(__name__)


def _as_is(result: Any) -> Any:
    return result


#: The packs whose plans `warm` caches: one per pack statement (whole store, fenced). Each statement
#: has one plan whatever the request (graphsvc.store.db.statement_arguments); budget 0 renders nothing.
WARM_REQUESTS: tuple[dict[str, Any], ...] = (
    {"token_budget": 0},
    {"token_budget": 0, "project_id": "graphsvc-warm", "terms": ["warm"]},
)


#: memory_retrieve's one statement and memory_digest's (one plan each whatever the request), planned
#: beside the packs'.
WARM_RETRIEVE: dict[str, Any] = {"terms": ["graphsvc-warm"], "token_budget": 0}
WARM_DIGEST: dict[str, Any] = {"project_id": "graphsvc-warm", "token_budget": 0}

#: The warm-up's units of plans in two chains made side by side, most wanted first (packs are most
#: of what agents send). The fenced pack plans the head both packs run and the digest reads through,
#: so the whole-store pack waits for it, and the digest comes after it in its chain. The write
#: units are made by a warm-up with `writes` only: first the statements of ingest, update,
#: tombstone and relate, then those only sessions, aliases and claims run (graphsvc.store.warmup.LATER).
WARM_CHAINS: tuple[tuple[str, ...], ...] = (
    ("pack-fenced", "digest", "writes-clean", "writes-later-clean"),
    ("retrieve", "pack-store", "writes-changed", "writes-later-changed"),
)
#: What each route waits for while a warm-up runs: the units whose plans its statements use.
WARM_GATES: dict[str, frozenset[str]] = {
    "pack-fenced": frozenset({"pack-fenced"}),
    "pack-store": frozenset({"pack-fenced", "pack-store"}),
    "retrieve": frozenset({"retrieve"}),
    "digest": frozenset({"pack-fenced", "digest"}),
    "writes": frozenset({"writes-clean", "writes-changed"}),
    "writes-later": frozenset({"writes-clean", "writes-changed", "writes-later-clean", "writes-later-changed"}),
}
#: A pack's gate, by the section statement that serves it (graphsvc.store.bootstrap.pack_statements):
#: most packs are fenced, and pass before the whole store's section plan is in.
PACK_GATES = {"bootstrap/sections_fenced": "pack-fenced", "bootstrap/sections_store": "pack-store"}
#: The writes that run statements of graphsvc.store.warmup.LATER: they wait for the "writes-later" gate
#: (an import too: its files carry aliases).
LATER_WRITES = frozenset({"alias", "session_start", "session_finish", "claim", "release"})

#: Seconds of its deadline a call keeps for its own statements when it waits for a re-warm: a
#: warm pack runs in tens of milliseconds, a write in a few hundred under load.
WARM_WAIT_RESERVE = 1.5
#: What an update by the operator (auth off, the CLI) records: no writer, so the previous key's
#: `written_by` does not outlive the version it wrote.
NO_PROVENANCE = {"written_by": None, "written_by_label": None}

#: The right each service operation needs (graphsvc.access): filled by `operation`, one entry per
#: operation a surface may call. tests/unit/test_access.py holds every public method to it.
OPERATION_RIGHTS: dict[str, str] = {}


def authorize(name: str) -> None:
    """The calling principal may run operation `name` (its declared right; admin also needs the whole
    store: export, import and key management cannot be fenced). Surfaces call it too, before costly
    work for an operation (an import's upload)."""
    right = OPERATION_RIGHTS[name]
    principal().require(right, name, whole_store=right == "admin")


def operation(right: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Declare a service operation and the right it needs: the calling principal
    (graphsvc.access.current_principal, set by the surface) is checked here, before the operation
    runs, for every surface alike. The operation itself applies the principal's scope to what it
    reads or writes (`Principal.fence`, `covers`, `check_write`)."""
    def declare(method: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(method)
        def checked(self: Any, *args: Any, **kwargs: Any) -> Any:
            authorize(method.__name__)
            return method(self, *args, **kwargs)

        OPERATION_RIGHTS[method.__name__] = right
        checked.required_right = right  # type: ignore[attr-defined]
        return checked
    return declare


#: Set in the warm-up's own calls, which must pass the warming gate in `bootstrap`.
_warming_call: ContextVar[bool] = ContextVar("graphsvc_warming_call", default=False)


class GraphService:
    def __init__(self, db: Database, clock: Clock = system_clock, idempotency_ttl: timedelta = DEFAULT_TTL,
                 call_concurrency: int | None = None):
        self.db = db
        #: How many of this process's calls the surfaces let work on Neo4j at once (None: no limit);
        #: the rest wait their turn within their bound (graphsvc.surfaces.deadline.CallSlots).
        self.call_concurrency = call_concurrency
        self.clock = clock
        self.idempotency_ttl = idempotency_ttl
        self._schema_applied = False
        self._schema_lock = threading.Lock()
        self._plans_warm = False  # set by `warm`; `ready` waits for it
        #: Per WARM_GATES: cleared while `warm` makes the plans that gate's calls run (a re-warm lets
        #: each route through once its own plans are in).
        self._planned = {gate: threading.Event() for gate in WARM_GATES}
        for planned in self._planned.values():
            planned.set()
        self._warming_writes = False  # a warm-up with `writes` runs (the writes wait for `_planned["writes"]`)
        #: What the background start-up (`start_in_background`) waits for; None when none is running.
        self._starting: str | None = None
        self._started = threading.Event()
        self._stop_starting = threading.Event()
        self._start_up_thread: threading.Thread | None = None
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
        """Plan the read statements now (seconds each on a cold Neo4j), not on an agent's call; with
        `writes`, every write statement as well (start-up does that in `ensure_schema`).

        The plans are made in units, most wanted first, two at a time (WARM_CHAINS): on a freshly
        started Neo4j every compile is slow, and all of them at once end together, late. A route
        waits only for the units it runs (WARM_GATES): packs pass once the pack plans are in, while
        the write plans are still being made. Other workers warming at the same moment add little:
        four sessions that miss one plan at once cost Neo4j 15-35 % more CPU than one, not four times."""
        from graphsvc.store.warmup import warm_claim_pack_reads, warm_write_plans

        began = time.monotonic()
        done_at: dict[str, float] = {}
        finished = threading.Lock()
        fenced_pack = threading.Event()  # the whole-store pack reuses the fenced one's head plan

        def plan_read(read: Callable[[dict[str, Any]], Any], request: dict[str, Any]) -> None:
            token = _warming_call.set(True)
            try:
                with self.db.longer_timeout():
                    read(request)
            finally:
                _warming_call.reset(token)

        def whole_store_pack() -> None:
            fenced_pack.wait(MAINTENANCE_TIMEOUT)
            plan_read(self.bootstrap, WARM_REQUESTS[0])

        # The later write units start once both first ones have ended: side by side with one of
        # them they would share its cores and hold back the gate of the common writes.
        first_writes = WARM_GATES["writes"]
        ended: set[str] = set()
        first_writes_ended = threading.Event()

        def later_writes(after_a_change: bool) -> None:
            first_writes_ended.wait(MAINTENANCE_TIMEOUT)
            warm_write_plans(self.db, after_a_change, "later")

        work: dict[str, Callable[[], None]] = {
            "pack-fenced": lambda: plan_read(self.bootstrap, WARM_REQUESTS[1]),
            "pack-store": whole_store_pack,
            "retrieve": lambda: plan_read(self.retrieve, WARM_RETRIEVE),
            "digest": lambda: plan_read(self.digest, WARM_DIGEST),
            "writes-clean": lambda: warm_write_plans(self.db, False, "first"),
            "writes-changed": lambda: warm_write_plans(self.db, True, "first"),
            "writes-later-clean": lambda: later_writes(False),
            "writes-later-changed": lambda: later_writes(True),
        }
        units = {unit for chain in WARM_CHAINS for unit in chain if writes or not unit.startswith("writes-")}
        gates = {gate: needs & units for gate, needs in WARM_GATES.items() if needs & units}

        def end(chain_units: tuple[str, ...]) -> None:
            with finished:
                ended.update(chain_units)
                if first_writes <= ended:
                    first_writes_ended.set()

        def run_chain(chain: tuple[str, ...]) -> None:
            try:
                for unit in chain:
                    if unit not in units:
                        continue
                    try:
                        work[unit]()
                    finally:
                        if unit == "pack-fenced":
                            fenced_pack.set()
                        end((unit,))
                    with finished:
                        done_at[unit] = time.monotonic() - began
                        for gate, needs in gates.items():
                            if needs <= done_at.keys():
                                self._planned[gate].set()
            finally:  # a unit that failed ends its chain: nothing waits for the rest of it
                end(chain)

        for gate in gates:
            self._planned[gate].clear()
        if writes:
            self._warming_writes = True
        try:
            with ThreadPoolExecutor(max_workers=len(WARM_CHAINS), thread_name_prefix="graphsvc-warm") as pool:
                for chain in [pool.submit(run_chain, chain) for chain in WARM_CHAINS]:
                    chain.result()
            # When each unit's plans were in (s from the start): what an operator reads to see how
            # long a start or a Neo4j restart kept calls waiting, and which.
            log.info("query plans warm after %.1f s (%s)", time.monotonic() - began,
                     ", ".join(f"{unit} {seconds:.1f} s" for unit, seconds in sorted(done_at.items(), key=lambda i: i[1])))
            if writes:  # after the writes are let through: only a keyed claim needs these
                warm_claim_pack_reads(self.db)
        finally:
            for gate in gates:
                self._planned[gate].set()
            if writes:
                self._warming_writes = False
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

    # -- start-up ---------------------------------------------------------

    #: Seconds between start-up attempts while Neo4j does not answer (doubling up to the second).
    START_UP_RETRY = (0.5, 5.0)

    def start_in_background(self) -> None:
        """Run the start-up work (reach Neo4j, `ensure_schema`, `warm`) in a background thread.

        The HTTP app calls this from its lifespan, which must not block: uvicorn serves nothing,
        not even /healthz, until the lifespan's start-up returns, and a hanging Neo4j would hold it
        for as long as it hangs. Until the work is done, `waiting_for` names the step and every
        call that needs Neo4j gets a fast 503 + Retry-After (`_refuse_until_started`). Attempts
        repeat, with a growing pause, until they succeed or `stop_start_up` is called. A service
        whose start-up work is already done (or that was never started this way, the CLI) serves
        at once.
        """
        if self._start_up_thread is not None:
            return
        if self._schema_applied and self._plans_warm:
            self._started.set()
            return
        self._starting = "neo4j"
        self._start_up_thread = threading.Thread(target=self._start_up, name="graphsvc-start-up", daemon=True)
        self._start_up_thread.start()

    def _start_up(self) -> None:
        pause, longest = self.START_UP_RETRY
        while not self._stop_starting.is_set():
            try:
                self._starting = "neo4j"
                if self.db.ping():
                    self._starting = "schema"
                    self.ensure_schema()
                    self._starting = "warm-up"
                    # Planning the pack statement takes seconds per shape on a fresh Neo4j; pay it here,
                    # not on the first agent's call (and again after a reconnect: Database.on_reconnect).
                    self.warm()
                    self._starting = None
                    self._started.set()
                    return
            except Unavailable as exc:
                log.warning("start-up waits for Neo4j (%s step): %s", self._starting, exc.message)
            except Exception:  # keep trying: the process stays up and says what it waits for
                log.exception("start-up failed at the %s step; trying again", self._starting)
            self._stop_starting.wait(pause)
            pause = min(2 * pause, longest)

    def stop_start_up(self, timeout: float) -> None:
        """Ask a running background start-up to give up, waiting at most `timeout` s for it (shutdown)."""
        self._stop_starting.set()
        if self._start_up_thread is not None:
            self._start_up_thread.join(timeout)

    def wait_started(self, timeout: float) -> bool:
        """True once the background start-up is done (at once when none runs), waiting at most `timeout` s."""
        if self._start_up_thread is None:
            return True
        return self._started.wait(timeout)

    def _refuse_until_started(self) -> None:
        step = self._starting
        if step is not None and not _warming_call.get():
            raise Unavailable(f"graphsvc is starting up (waiting for {step}); retry shortly.")

    def waiting_for(self) -> str | None:
        """What keeps the service from being ready: "neo4j", "schema" or "warm-up"; None when ready.

        Ready means Neo4j answers, the schema is in place, and the pack's plans are warm. A load
        balancer, compose's healthcheck or `make up` sends agents only to a worker that says so; a
        cold worker would have its first packs plan the statements (seconds each on a fresh Neo4j)
        under the request timeout. During the background start-up this answers from its step
        without touching Neo4j; after a Neo4j restart the warm-up runs again in the background
        (Database.on_reconnect) and this answers "warm-up" until it is done.
        """
        step = self._starting
        if step is not None:
            return step
        if not self.db.ping():  # in outage mode this probe may be the one that starts the re-warm
            return "warm-up" if self.db.warming else "neo4j"
        try:
            self.ensure_schema()
        except Unavailable:
            return "schema"
        if self.db.warming:
            return "warm-up"
        if not self._plans_warm:  # the start-up warm-up found Neo4j down: warm now, off this call
            self.db.rewarm()
            return "warm-up"
        return None

    def ready(self) -> bool:
        """True when nothing is waited for (`waiting_for`)."""
        return self.waiting_for() is None

    def _refuse_while_warming(self, gate: str = "writes") -> None:
        """After a reconnect every call would wait for the cold plans its statements need, each cut off
        by the query timeout while they crowd a server that is compiling; one warm-up compiles them
        instead. A call that arrives meanwhile waits for it without touching Neo4j, keeping
        WARM_WAIT_RESERVE s of its deadline to run once the plans are in; a warm-up that outlasts
        that is a 503 + Retry-After, as any wait past the bound."""
        if not self.db.warming or _warming_call.get():
            return
        deadline = call_deadline.get()
        left = (deadline - time.monotonic()) if deadline is not None else self.request_bound
        # Each route waits for its own plans (WARM_GATES); a write, outside a warm-up that makes the
        # write plans, for the whole re-warm.
        if not gate.startswith("writes") or self._warming_writes:
            planned = self._planned[gate].wait
        else:
            planned = self.db.wait_warm
        if not planned(max(0.0, left - WARM_WAIT_RESERVE)):
            raise Unavailable("Neo4j is back and the query plans are being compiled; retry shortly.")

    # -- the product ------------------------------------------------------

    @operation("read")
    def bootstrap(self, data: Any) -> dict[str, Any]:
        """SPEC §4: the cold-start pack. Bad input → 400 naming the field. A scoped key's pack is
        fenced to its scope (docs/keys.md); a fence outside it is a 403."""
        from graphsvc.store.bootstrap import build_pack, pack_statements

        request = parse(BootstrapRequest, data if data is not None else {}, BadRequest)
        self._refuse_until_started()
        scope = principal().fence(request.project_id, request.project_prefix)
        self.ensure_schema()
        self._refuse_while_warming(PACK_GATES[pack_statements(request.project_id, request.project_prefix, scope)[1]])
        pack = build_pack(self.db, request, self.clock(), scope)
        telemetry.observe_pack(pack)
        return pack

    @staticmethod
    def _one_fence(request: Any) -> Any:
        """Retrieve, digest and the alias listing read ONE fence (SPEC §2): a scoped key's request must
        lie inside its scope (403 naming it otherwise); without a fence, a key of one prefix reads
        that subtree, and a key of several must name one (docs/keys.md)."""
        caller = principal()
        for name in ("project_id", "project_prefix"):  # both: the alias listing reads each one's ancestors
            value = getattr(request, name)
            if value is not None and not caller.covers(value):
                caller.fence(value if name == "project_id" else None, value if name == "project_prefix" else None)
        scope = caller.fence(request.project_id, request.project_prefix)
        if scope is None:
            return request
        if len(scope) == 1:
            return request.model_copy(update={"project_prefix": scope[0]})
        raise Forbidden("this key reads several subtrees (" + principal().scope_text() + "); send project_id or "
                        "project_prefix inside one of them", field="project_prefix")

    @operation("read")
    def retrieve(self, data: Any) -> dict[str, Any]:
        """SPEC §8: per-task recall over the caller's terms plus taught aliases. Bad input → 400 naming the field."""
        from graphsvc.store.retrieve import retrieve

        request = self._one_fence(parse(RetrieveRequest, data if data is not None else {}, BadRequest))
        self._refuse_until_started()
        self.ensure_schema()
        self._refuse_while_warming("retrieve")
        return retrieve(self.db, request, self.clock())

    @operation("read")
    def digest(self, data: Any) -> dict[str, Any]:
        """SPEC §9: a scope at a glance (counts, the pack's ready section, blocked, newest). Bad input → 400."""
        from graphsvc.store.digest import digest

        request = self._one_fence(parse(DigestRequest, data if data is not None else {}, BadRequest))
        self._refuse_until_started()
        self.ensure_schema()
        self._refuse_while_warming("digest")
        return digest(self.db, request, self.clock())

    @operation("read")
    def aliases(self, data: Any) -> dict[str, Any]:
        """SPEC §10: the alias sets a retrieve with this fence would use (a read)."""
        from graphsvc.store.aliases import list_aliases

        request = self._one_fence(parse(AliasListRequest, data if data is not None else {}, BadRequest))
        self._refuse_until_started()
        self.ensure_schema()
        self._refuse_while_warming("retrieve")
        return list_aliases(self.db, request)

    # -- change detection (SPEC §13; graphsvc.surfaces.watching) -----------

    @operation("read")
    def watch_request(self, pack: str, data: Any) -> tuple[dict[str, Any], WatchFields, WatchScope]:
        """A watch of `pack` ("bootstrap" or "digest"): the pack's own request, the watch's fields and
        the fence whose writes can change the pack. `etag` / `wait_s` out of their rules → 422; the
        pack's fields → the pack's own 400; a fence outside the caller's key → 403."""
        model = {"bootstrap": BootstrapWatchRequest, "digest": DigestWatchRequest}[pack]
        if not isinstance(data, dict):
            raise BadRequest(f"the body must be a JSON object with the fields of {model.__name__}")
        fields = parse(WatchFields, {name: data[name] for name in WatchFields.model_fields if name in data}, InvalidInput)
        full = parse(model, data, BadRequest)
        request = {name: value for name, value in data.items() if name not in WatchFields.model_fields}
        if pack == "digest":
            fenced = self._one_fence(full)
            return request, fields, WatchScope(fenced.project_id, fenced.project_prefix)
        keys = principal().fence(full.project_id, full.project_prefix)
        return request, fields, WatchScope(full.project_id, full.project_prefix, keys)

    @operation("read")
    def next_change_instant(self, scope: WatchScope) -> datetime | None:
        """The earliest `valid_to` or `lease_until` still ahead of the clock in `scope` (a superset):
        when a watched pack can change with no write."""
        from graphsvc.store.changes import next_instant

        self._refuse_until_started()
        return next_instant(self.db, scope.seek_prefixes(), self.clock())

    @operation("read")
    def changes_since(self, since_ms: int | None, lookback_ms: int) -> tuple[int, list[tuple[str, int, int]]]:
        """The change markers (graphsvc.store.changes) moved at or after `since_ms - lookback_ms` on
        Neo4j's clock (None: its now), and that clock now: one poll of a process's watchers."""
        from graphsvc.store.changes import changed_since

        self._refuse_until_started()
        return changed_since(self.db, since_ms, lookback_ms)

    # -- writes (SPEC §5) -------------------------------------------------
    # Each takes an optional idempotency key (SPEC §5): see graphsvc.store.idempotency.

    def _once(self, key: IdempotencyKey | None, operation: str, request: Any, now: datetime,
              write: Callable[[Wrap | None], Any], render: Callable[[Any], Any] = _as_is) -> Any:
        """Run `write` (a store call taking a wrap); with a key, replay or record in the same transaction."""
        self._refuse_until_started()
        self.ensure_schema()
        self._refuse_while_warming("writes-later" if operation in LATER_WRITES else "writes")
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
                                              provenance=caller.provenance() or NO_PROVENANCE))

    @operation("write")
    def tombstone(self, capsule_ids: list[str], idempotency: IdempotencyKey | None = None) -> dict[str, Any]:
        from graphsvc.store.tombstone import tombstone

        now, visible = self.clock(), principal().covers
        return self._once(idempotency, "tombstone", {"ids": capsule_ids}, now,
                          lambda wrap: tombstone(self.db, capsule_ids, now, wrap=wrap, visible=visible))

    @operation("write")
    def alias(self, data: Any, idempotency: IdempotencyKey | None = None) -> dict[str, Any]:
        """SPEC §10: teach (or forget) a term's aliases in one scope; the term's set as it now stands.
        A scoped key teaches inside its scope only (a store-wide set would reach every retrieve)."""
        from graphsvc.store.aliases import teach

        req, now, caller = parse(AliasRequest, data, InvalidInput), self.clock(), principal()
        if req.project_prefix is None and caller.prefixes is not None:
            raise Forbidden("project_prefix: a store-wide alias set needs a key for the whole store; this key may write "
                            + caller.scope_text() + " (send project_prefix inside it)", field="project_prefix")
        if req.project_prefix is not None:
            caller.check_write(req.project_prefix, "project_prefix")
        return self._once(idempotency, "alias", data, now, lambda wrap: teach(self.db, req, wrap=wrap))

    @operation("write")
    def session_start(self, data: Any, idempotency: IdempotencyKey | None = None) -> dict[str, Any]:
        """SPEC §11: open a session for an agent in a project; its id and the project's digest (§9)."""
        from graphsvc.store.digest import digest
        from graphsvc.store.sessions import start

        req, now = parse(SessionStart, data, InvalidInput), self.clock()
        principal().check_write(req.project_id, "project_id")
        # The key stores the opened session; the digest is a read, computed for this answer (a retry
        # gets the same session and the digest as it stands).
        # Read first: a digest that fails (503) leaves no session behind for a retry to duplicate, and
        # opening a session changes nothing the digest shows.
        fence = DigestRequest(project_id=req.project_id, newest=req.newest, token_budget=req.token_budget,
                              agent=req.agent)  # SPEC §12: the agent's own claimed work first
        self._refuse_until_started()
        scope_digest = digest(self.db, fence, now)
        opened = self._once(idempotency, "session_start", data, now, lambda wrap: start(self.db, req, now, wrap=wrap),
                            render=lambda session_id: {"session_id": session_id})
        return {**opened, "digest": scope_digest}

    @operation("write")
    def session_finish(self, data: Any, idempotency: IdempotencyKey | None = None) -> dict[str, Any]:
        """SPEC §11: close a session and store its handoff (superseding the agent's previous one there).
        A session of a project outside a scoped key's scope is answered as an unknown one (404)."""
        from graphsvc.store.sessions import finish

        req, now, caller = parse(SessionFinish, data, InvalidInput), self.clock(), principal()
        return self._once(idempotency, "session_finish", data, now,
                          lambda wrap: finish(self.db, req, now, wrap=wrap, visible=caller.covers,
                                              provenance=caller.provenance()))

    # -- claims (SPEC §12) ------------------------------------------------

    @operation("write")
    def claim(self, data: Any, idempotency: IdempotencyKey | None = None) -> dict[str, Any]:
        """SPEC §12: lease the first ready task the agent's own pack shows (or `task_id`) to the agent; the
        holder claiming again renews. A fence or task outside a scoped key's scope: 403 / as unknown (404)."""
        from graphsvc.store.claims import claim

        req, now, caller = parse(ClaimRequest, data, InvalidInput), self.clock(), principal()
        scope = caller.fence(req.project_id, req.project_prefix)
        return self._once(idempotency, "claim", data, now,
                          lambda wrap: claim(self.db, req, now, key=caller.key_id, scope=scope,
                                             visible=caller.covers, wrap=wrap))

    @operation("write")
    def release(self, data: Any, idempotency: IdempotencyKey | None = None) -> dict[str, Any]:
        """SPEC §12: end the agent's lease (idempotent); another agent's live lease is a 409 naming it."""
        from graphsvc.store.claims import release

        req, now, caller = parse(ReleaseRequest, data, InvalidInput), self.clock(), principal()
        return self._once(idempotency, "release", data, now,
                          lambda wrap: release(self.db, req, now, visible=caller.covers, wrap=wrap))

    # -- reads (SPEC §5) --------------------------------------------------

    @operation("read")
    def get(self, capsule_ids: list[str]) -> dict[str, Any]:
        from graphsvc.store.reads import get_capsules

        self._refuse_until_started()
        return get_capsules(self.db, capsule_ids, self.clock(), visible=principal().covers)

    @operation("read")
    def list(self, data: Any) -> dict[str, Any]:
        from graphsvc.store.reads import list_capsules

        self._refuse_until_started()
        caller = principal()
        return list_capsules(self.db, data, self.clock(), fence=caller.fence, visible=caller.covers)

    # -- API keys (issue 27; docs/keys.md) ----------------------------------

    @operation("admin")
    def keys_create(self, data: Any) -> dict[str, Any]:
        """A new key; the answer's `key` is the only time its secret is shown."""
        from graphsvc.store.keys import create_key

        request = parse(KeyCreate, data if data is not None else {}, InvalidInput)
        self._refuse_until_started()
        self.ensure_schema()
        return create_key(self.db, request.label, request.rights, request.prefixes, self.clock())

    @operation("admin")
    def keys_list(self) -> dict[str, Any]:
        from graphsvc.store.keys import list_keys

        self._refuse_until_started()
        self.ensure_schema()
        return {"keys": list_keys(self.db)}

    @operation("admin")
    def keys_revoke(self, key_id: Any) -> dict[str, Any]:
        """Revoke a key (idempotent); every worker refuses it within a second (graphsvc.keyring)."""
        from graphsvc.store.keys import revoke_key

        if not isinstance(key_id, str) or KEY_ID.fullmatch(key_id) is None:
            raise InvalidInput("id: an API key id is 12 lowercase hex digits (the part after gsk_)", field="id")
        self._refuse_until_started()
        self.ensure_schema()
        return revoke_key(self.db, key_id, self.clock())

    # -- transfer (SPEC §5) -----------------------------------------------

    @operation("admin")
    def export_lines(self, watch: Watch | None = None) -> Iterator[str]:
        from graphsvc.store.transfer import export_lines

        self._refuse_until_started()
        return export_lines(self.db, watch)

    @operation("admin")
    def import_file(self, file: Any, digest: str = "", progress: Any = None,
                    idempotency: IdempotencyKey | None = None, watch: Watch | None = None) -> dict[str, Any]:
        """`import_lines` over a seekable binary file read line by line in passes (never whole);
        `digest`: the SHA-256 of its bytes, for an idempotency key."""
        from graphsvc.store.transfer import Source

        return self.import_lines(Source.of_file(file, digest), progress=progress, idempotency=idempotency,
                                 watch=watch)

    @operation("admin")
    def import_lines(self, lines: Any, progress: Any = None,
                     idempotency: IdempotencyKey | None = None, watch: Watch | None = None) -> dict[str, Any]:
        """A resumable import (graphsvc.store.transfer): `lines` is a list of lines or a transfer.Source
        (a file read in passes); with a key, the key is recorded in the import's last transaction.

        An import spans several transactions, so the key is checked before it starts (a retry is
        answered without parsing), and a concurrent twin that loses a race for an id (409) is
        answered from the winner's key. The key's request hash is the body's SHA-256 (Source.digest).
        """
        from graphsvc.store.transfer import Source, import_lines

        self._refuse_until_started()
        self._refuse_while_warming("writes-later")
        source = lines if isinstance(lines, Source) else Source.of_lines(lines)
        if idempotency is None:
            # The file is checked before Neo4j is needed: a bad line is named even with Neo4j down.
            return import_lines(self.db, source, progress=progress, watch=watch, prepare=self.ensure_schema)
        self.ensure_schema()
        claim = idempotency.claim("import", {"sha256": source.digest}, self.clock(), self.idempotency_ttl)
        try:
            check(self.db, claim)
            try:
                body = import_lines(self.db, source, progress=progress, watch=watch,
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
