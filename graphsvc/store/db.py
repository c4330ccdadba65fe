"""The one place that talks to the Neo4j driver.

Follows the driver manual's idioms: managed transactions (`execute_read` / `execute_write`) for
every unit of work, so on a cluster (a `neo4j://` or `neo4j+s://` URI) reads are routed to
followers / read replicas and writes to the leader. Every session starts with the request's
bookmarks (graphsvc.store.bookmarks) and every write records the bookmark it committed, so a
caller reads its own writes whichever worker or member answers.

Bounded waits: getting a connection is bounded by `timeout` (GRAPHSVC_NEO4J_TIMEOUT), and every
transaction carries the driver's transaction timeout `query_timeout` (GRAPHSVC_QUERY_TIMEOUT),
which Neo4j enforces, so a swamped or half-started server answers "timed out" instead of
running a statement for 30 s. A FROZEN server enforces nothing, so the surfaces also hold each
call to `request_bound` = timeout + query_timeout on the wall clock (graphsvc.surfaces.deadline).
Every outage becomes `Unavailable` (HTTP 503 + Retry-After), and credentials never appear in
the messages. In outage mode a call does not run its own statements: one call at a time sends a
trivial probe instead, and the first probe that succeeds ends the outage and fires `on_reconnect`
(the service warms its plans again, in the background) before any call meets a cold plan.

One error is not an outage (`Database.connectivity_failed` has the rule): a failed connection is
retried within the caller's deadline while a fresh connection to the server still completes the
Bolt handshake (`Database.reachable`); only a failed probe switches the process into outage mode.
"""

from __future__ import annotations

import logging
import re
import socket
import ssl
import threading
import time
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, Callable, Iterator, TypeVar
from urllib.parse import urlsplit

import neo4j
from neo4j import READ_ACCESS, WRITE_ACCESS, GraphDatabase, ManagedTransaction, unit_of_work
from neo4j.exceptions import (ClientError, ConfigurationError, ConnectionPoolError, DriverError, IncompleteCommit,
                              ServiceUnavailable, SessionExpired, TransientError)

from graphsvc.store import bookmarks, cypher
from graphsvc.config import InvalidNeo4jUri, Settings
from graphsvc.errors import BadRequest, Conflict, Unavailable
from graphsvc.request_context import call_deadline
from graphsvc.telemetry import neo4j_work

log = logging.getLogger(__name__)
T = TypeVar("T")

#: Everything between "//" and the LAST "@": a password may itself contain "/" or "@".
_USERINFO = re.compile(r"//(.*)@")


def redact_uri(uri: str) -> str:
    """The URI with any userinfo (user:password@) replaced by ***, safe to log or show."""
    return _USERINFO.sub("//***@", uri, count=1)


def _clean_reason(exc: Exception, uri: str, redacted: str) -> str:
    reason = str(exc).replace(uri, redacted)
    userinfo = _USERINFO.search(uri)
    if userinfo and userinfo.group(1) and userinfo.group(1) in reason:  # the driver quoted it some other way
        return type(exc).__name__
    return reason


#: The server's answers when a transaction outlived the timeout the driver gave it (or its own).
TX_TIMED_OUT = ("Neo.ClientError.Transaction.TransactionTimedOutClientConfiguration",
                "Neo.ClientError.Transaction.TransactionTimedOut",
                "Neo.ClientError.Transaction.LockClientStopped")  # timed out waiting for a lock
#: Seconds for start-up work (schema, plan warming): planning is slow on a cold server.
MAINTENANCE_TIMEOUT = 120.0
#: What a schema statement fails with when another process (a second worker starting at the same
#: moment) made the same change first: `IF [NOT] EXISTS` is checked before the lock is taken, so
#: the loser of the race sees the winner's rule (or its absence) as an error. The goal is reached.
SCHEMA_SETTLED_ELSEWHERE = frozenset({
    "Neo.ClientError.Schema.EquivalentSchemaRuleAlreadyExists",
    "Neo.ClientError.Schema.IndexNotFound",
    "Neo.ClientError.Schema.ConstraintNotFound",
})

#: Failures of the connection or the server rather than of the statement: the probe decides
#: whether they are an outage (`Database.connectivity_failed`).
CONNECTIVITY_ERRORS = (ServiceUnavailable, SessionExpired, ConnectionPoolError, OSError)
#: Seconds before the first retry of a transient connectivity failure (doubling, at most RETRY_DELAY_MAX).
RETRY_DELAY = 0.05
RETRY_DELAY_MAX = 0.5
#: The Bolt handshake: the magic preamble, then four version proposals (5.0, then none). Any
#: 4-byte answer, even "no common version", proves a live server process behind the port.
BOLT_HANDSHAKE = b"\x60\x60\xb0\x17" + b"\x00\x00\x00\x05" + b"\x00" * 12
_DEFAULT_BOLT_PORT = 7687


class TransientUnavailable(Unavailable):
    """A connectivity failure while the server still answers a fresh connection: retried within
    the caller's deadline, and a 503 (without outage mode) when no time is left."""


class Abandoned(Unavailable):
    """The caller stopped waiting (its surface answered 503 at the request's bound) before this
    work ended: the transaction is rolled back at its next statement or before its commit, so a
    thread the surface gave up on (a Neo4j frozen, then thawed) neither writes after its caller
    was told 503 nor queues more work behind the requests that came after it."""


def check_deadline() -> None:
    """Raise `Abandoned` when the current call's deadline (graphsvc.request_context) has passed."""
    deadline = call_deadline.get()
    if deadline is not None and time.monotonic() >= deadline:
        raise Abandoned("the caller stopped waiting for this call (its bound passed); it was rolled back.")


#: A per-thread override of the transaction timeout (`Database.longer_timeout`).
_tx_timeout_override: ContextVar[float | None] = ContextVar("graphsvc_tx_timeout", default=None)


class Database:
    """A driver plus the database name, with outage handling and named statements."""

    def __init__(self, uri: str, user: str, password: str, database: str = "neo4j", timeout: float = 2.0,
                 query_timeout: float = 5.0):
        self.uri = redact_uri(uri)  # it appears in 503 messages and logs
        self.database = database
        self.timeout = timeout
        self.query_timeout = query_timeout
        #: The longest a caller waits for one call, on the wall clock: a connection, then one statement.
        self.request_bound = timeout + query_timeout
        #: Called (in a background thread) once a probe succeeds after an outage (`_probe_outage`).
        self.on_reconnect: Callable[[], None] | None = None
        self._outage = False
        self._probing = threading.Lock()  # one outage probe at a time
        self._reconnecting = threading.Lock()
        self._warm = threading.Event()  # set whenever no `on_reconnect` runs (`wait_warm`)
        self._warm.set()
        self._followers = Followers(self._run_followers)
        # `timeout` budgets the WHOLE wait for Neo4j, retries included. With every knob set to it
        # (and the driver's default 1 s first retry delay) a stopped Neo4j took 2.8 s to a 503
        # (tests/integration/test_outage.py). The Bolt handshake is bounded by the acquisition
        # deadline and its failure is retried, so the worst case is two attempts plus one delay:
        # 2 * timeout/3 + timeout/10 (±20 %) ≈ 0.8 * timeout; a refused connection ≈ 0.4 * timeout.
        try:
            self._driver = GraphDatabase.driver(
                uri,
                auth=(user, password),
                connection_timeout=timeout / 4,
                connection_acquisition_timeout=timeout / 3,
                max_transaction_retry_time=timeout / 4,
                initial_retry_delay=min(timeout / 10, 0.2),  # deadlock retries stay brisk too
                # A connection idle longer than `timeout` is checked (RESET) before use; busy ones are
                # not: a check on every acquisition cost a round trip per call (~1.8 ms of ~6 ms).
                # A connection that died meanwhile fails on use and the managed transaction retries
                # on a fresh one; a frozen server is caught by the surfaces' wall-clock bound.
                liveness_check_timeout=timeout,
                notifications_min_severity="OFF",
            )
        except (ConfigurationError, ValueError) as exc:
            # The driver's message quotes the whole URI, userinfo (a password?) included.
            hint = "; put the credentials in NEO4J_USER / NEO4J_PASSWORD" if self.uri != uri else ""
            reason = _clean_reason(exc, uri, self.uri).rstrip(".")
            raise InvalidNeo4jUri(f"NEO4J_URI {self.uri} is not usable: {reason}{hint}") from None
        # Parsed after the driver accepted the URI, so a malformed one gets the driver's message above.
        parts = urlsplit(uri)
        self._address = (parts.hostname or "localhost", parts.port or _DEFAULT_BOLT_PORT)
        self._tls = parts.scheme.endswith("+s") or parts.scheme.endswith("+ssc")

    @classmethod
    def from_settings(cls, settings: Settings) -> "Database":
        return cls(
            settings.neo4j_uri,
            settings.neo4j_user,
            settings.neo4j_password.get_secret_value(),
            settings.neo4j_database,
            settings.graphsvc_neo4j_timeout,
            settings.graphsvc_query_timeout,
        )

    def close(self) -> None:
        # What committed writes asked to run after them goes out before the driver does, within
        # the bound every other wait has.
        if not self._followers.settle(self.request_bound):
            log.warning("closing with statements after committed writes still queued")
        self._followers.stop()
        self._driver.close()

    @contextmanager
    def longer_timeout(self, seconds: float = MAINTENANCE_TIMEOUT) -> Iterator[None]:
        """Transactions in this block may run `seconds` (start-up and warm-up work, never a request)."""
        reset = _tx_timeout_override.set(seconds)
        try:
            yield
        finally:
            _tx_timeout_override.reset(reset)

    @property
    def outage(self) -> bool:
        """True from a failed connectivity probe until an outage probe (`_probe_outage`) or any
        other statement succeeds."""
        return self._outage

    def reachable(self) -> bool:
        """A fresh TCP connection to the Bolt address completes the Bolt handshake within timeout / 2.

        Cheap (one round trip, no pool, no login) and independent of the driver's pool, so an
        exhausted pool or one broken pooled connection does not look like an outage, while a stopped
        (refused), killed, frozen (SIGSTOP: the kernel accepts, nobody answers) or unroutable server
        does. With TLS (`+s`, `+ssc`) the TLS handshake comes first; the certificate is not checked,
        because nothing is sent but the Bolt preamble."""
        try:
            with socket.create_connection(self._address, timeout=self.timeout / 2) as raw:
                raw.settimeout(self.timeout / 2)
                conn: socket.socket = raw
                if self._tls:
                    context = ssl.create_default_context()
                    context.check_hostname = False
                    context.verify_mode = ssl.CERT_NONE
                    conn = context.wrap_socket(raw, server_hostname=self._address[0])
                conn.sendall(BOLT_HANDSHAKE)
                answer = b""
                while len(answer) < 4:
                    chunk = conn.recv(4 - len(answer))
                    if not chunk:
                        return False
                    answer += chunk
                return True
        except (OSError, ssl.SSLError):
            return False

    def connectivity_failed(self, exc: BaseException) -> Unavailable:
        """The rule for a connectivity failure (CONNECTIVITY_ERRORS) that reached graphsvc, i.e. one
        the driver's own retries (bounded by `max_transaction_retry_time`) did not absorb.

        - Already in outage mode: a 503 at once, no probe (the outage probe ends it: `_probe_outage`).
        - Otherwise probe the server with a fresh connection (`reachable`). When the probe fails,
          Neo4j is really unreachable: outage mode starts (the first outage probe that succeeds
          afterwards fires `on_reconnect`, the re-warm) and the answer is a 503 at once.
        - When the probe succeeds the failure was transient (a pooled connection the server
          dropped, a pool acquisition timeout under load, a leader switch): no outage mode, and a
          `TransientUnavailable` that `_retrying` retries while the caller's deadline leaves time.
          A commit whose outcome is unknown (IncompleteCommit) is never retried here.
        """
        if self._outage:
            return Unavailable(f"Neo4j at {self.uri} is not reachable; retry shortly.")
        if not self.reachable():
            self._outage = True
            log.warning("neo4j unreachable at %s (%s; the probe failed too): outage mode", self.uri,
                        type(exc).__name__)
            return Unavailable(f"Neo4j at {self.uri} is not reachable; retry shortly.")
        log.info("neo4j connection failure at %s (%s) while the server answers: retrying", self.uri, type(exc).__name__)
        message = f"Neo4j at {self.uri} did not answer in time; retry shortly."
        return Unavailable(message) if isinstance(exc, IncompleteCommit) else TransientUnavailable(message)

    def _deadline(self) -> float:
        """When the current call must have answered: the surface's deadline, else `request_bound` from now."""
        own = time.monotonic() + self.request_bound
        given = call_deadline.get()
        return own if given is None else min(given, own)

    def _probe_outage(self) -> None:
        """In outage mode: 503 at once, unless this call is the one that probes and the probe finds
        Neo4j back with no re-warm to wait for (no `on_reconnect`: the CLI, a bare Database).

        A Neo4j that comes back has an empty plan cache and a cold JVM. Calls that ran their own
        statements the moment it answered would each plan them, seconds apiece, cut off by the
        query timeout (a plan cut short is not cached), on the cores the re-warm needs; and the
        re-warm would only start once one of them got through. So during an outage one call at a
        time sends `ping` (planned in milliseconds) in its place: its success ends the outage and
        starts the re-warm, and that call is a 503 like the others. Every later call meets the
        re-warm and waits for its own route's plans (GraphService._refuse_while_warming)."""
        if not self._probing.acquire(blocking=False):
            raise Unavailable(f"Neo4j at {self.uri} is not reachable; retry shortly.")
        try:
            if self._outage:  # else another call's probe ended it meanwhile
                with self._outage_as_unavailable():  # a success ends the outage: `_recovered`
                    self._driver.execute_query(neo4j.Query(cypher.load("ping"), timeout=self.timeout),
                                               database_=self.database, routing_=neo4j.RoutingControl.READ)
        finally:
            self._probing.release()
        if self.warming:
            raise Unavailable("Neo4j is back and the query plans are being compiled; retry shortly.")

    def _retrying(self, attempt: Callable[[], T]) -> T:
        """`attempt()` (one session, one transaction), again after a transient connectivity failure
        while the deadline leaves time for a back-off and another try. In outage mode the outage
        probe goes first (`_probe_outage`)."""
        if self._outage:
            self._probe_outage()
        deadline = self._deadline()
        delay = RETRY_DELAY
        while True:
            try:
                with self._outage_as_unavailable():
                    return attempt()
            except TransientUnavailable:
                if time.monotonic() + delay >= deadline:
                    raise
                time.sleep(delay)
                delay = min(2 * delay, RETRY_DELAY_MAX)

    def _tx_timeout(self) -> float:
        override = _tx_timeout_override.get()
        return self.query_timeout if override is None else override

    def _recovered(self) -> None:
        """Neo4j answers again: warm what a restart made cold, once, off the request's path."""
        self._outage = False
        self.rewarm()

    @property
    def warming(self) -> bool:
        """True while `on_reconnect` runs (the service refuses packs meanwhile, see GraphService.bootstrap)."""
        return self._reconnecting.locked()

    def wait_warm(self, timeout: float) -> bool:
        """Wait at most `timeout` s for a running `on_reconnect` to end; True when none runs."""
        return self._warm.wait(max(0.0, timeout))

    def rewarm(self) -> None:
        """Run `on_reconnect` in a background thread unless it is already running."""
        if self.on_reconnect is None or not self._reconnecting.acquire(blocking=False):
            return
        self._warm.clear()

        def warm() -> None:
            try:
                self.on_reconnect()  # type: ignore[misc]
            except Exception as exc:  # outage mode again: the next probe that succeeds warms again
                log.warning("warming the query plans failed (%s); retrying once Neo4j answers a probe",
                            type(exc).__name__)
                self._outage = True
            finally:
                self._reconnecting.release()
                self._warm.set()

        threading.Thread(target=warm, name="graphsvc-rewarm", daemon=True).start()

    @contextmanager
    def _outage_as_unavailable(self) -> Iterator[None]:
        try:
            with neo4j_work():  # metrics: work in flight, driver errors by class
                yield
        except CONNECTIVITY_ERRORS as exc:
            raise self.connectivity_failed(exc) from None
        except TransientError as exc:
            raise Unavailable(f"Neo4j is busy ({exc.code}); retry shortly.") from None
        except DriverError as exc:  # a result or session misused: not Neo4j's state, no outage
            log.warning("neo4j driver error: %s", type(exc).__name__)
            raise Unavailable(f"Neo4j at {self.uri} did not answer in time; retry shortly.") from None
        except ClientError as exc:
            code = exc.code or ""
            # Refused credentials (or a login rate limit) and a missing database are the
            # deployment's fault, not the caller's: a 503 for the caller, the code (never the
            # credentials) for the operator.
            if code in TX_TIMED_OUT:
                log.warning("neo4j transaction outlived GRAPHSVC_QUERY_TIMEOUT=%ss", self._tx_timeout())
                raise Unavailable(f"Neo4j did not finish within the query timeout ({self._tx_timeout():g} s; "
                                  "GRAPHSVC_QUERY_TIMEOUT); it is busy or warming up, retry shortly.") from None
            if code.startswith("Neo.ClientError.Transaction.InvalidBookmark"):
                raise BadRequest("the bookmark is not one this Neo4j database issued; send back the bookmark "
                                 "of a write to this service unchanged, or omit it", field=bookmarks.field_name()) from None
            if code.startswith("Neo.ClientError.Security."):
                log.error("neo4j at %s refused the service's login: %s", self.uri, code)
                raise Unavailable(f"Neo4j at {self.uri} refused the service's credentials ({code}); "
                                  "an operator must fix NEO4J_USER / NEO4J_PASSWORD.") from None
            if code.startswith("Neo.ClientError.Database."):
                log.error("neo4j database %r is not usable: %s", self.database, code)
                raise Unavailable(f"Neo4j database '{self.database}' is not available ({code}); "
                                  "an operator must fix NEO4J_DATABASE.") from None
            if code == "Neo.ClientError.Schema.ConstraintValidationFailed":
                # Two writers raced for the same unique id (e.g. concurrent imports of one file).
                raise Conflict("another write stored the same capsule id at the same time; "
                               "nothing of this request was written, retry it") from None
            raise
        else:
            if self._outage:
                self._recovered()

    def query(self, name: str, **params: Any) -> list[neo4j.Record]:
        """Run the named read statement `cypher/<name>.cypher` with parameters (one read transaction)."""
        text, bound = cypher.load(name), statement_arguments(name, params)
        return self.read(lambda tx: list(tx.run(text, bound)))

    def read(self, work: Callable[[ManagedTransaction], T]) -> T:
        """One read transaction (a consistent snapshot), routed to a reader on a cluster."""
        return self._transaction(READ_ACCESS, work)

    def write(self, work: Callable[[ManagedTransaction], T]) -> T:
        """One write transaction: everything in `work` commits together or not at all."""
        return self._transaction(WRITE_ACCESS, work)

    def _transaction(self, access: str, work: Callable[[ManagedTransaction], T]) -> T:
        """`work` in a managed transaction carrying the transaction timeout and the request's bookmarks."""
        committed: list[tuple[str, dict[str, Any]]] = []

        def checked(tx: ManagedTransaction) -> T:
            result = work(tx)
            check_deadline()  # never commit what the caller was already told 503 for
            committed[:] = getattr(tx, AFTER_COMMIT, ())  # the attempt that commits (a retry starts again)
            return result

        bounded = unit_of_work(timeout=self._tx_timeout())(checked)

        def attempt() -> T:
            check_deadline()
            with self._driver.session(database=self.database, bookmarks=bookmarks.session_bookmarks(),
                                      default_access_mode=access) as session:
                if access == READ_ACCESS:
                    return session.execute_read(bounded)
                result = session.execute_write(bounded)
                bookmarks.record_write(session.last_bookmarks())
                return result

        result = self._retrying(attempt)
        if committed:
            self._followers.add(committed)
        return result

    def settle(self, timeout: float | None = None) -> bool:
        """Wait until every `after_commit` statement of the writes committed so far has run (or
        failed and been logged); False when `timeout` (default: `request_bound`) passed first."""
        return self._followers.settle(self.request_bound if timeout is None else timeout)

    def _run_followers(self, name: str, params: dict[str, Any]) -> None:
        try:
            self._transaction(WRITE_ACCESS, lambda tx: run(tx, name, **params))
        except Exception as exc:  # the write it follows has committed and answered: only a log line
            log.warning("%s after a committed write failed (%s); the write itself is committed",
                        name, type(exc).__name__)

    def observe_bookmark(self) -> None:
        """Record the bookmark of a trivial transaction on the leader: it covers every write committed before it.

        For an idempotent replay, whose own transaction wrote nothing (and so yields no bookmark),
        while the caller still needs one that covers the write it is being answered from.
        """
        def attempt() -> None:
            with self._driver.session(database=self.database, bookmarks=bookmarks.session_bookmarks(),
                                      default_access_mode=WRITE_ACCESS) as session:
                # execute_write: on a cluster only the leader is sure to have the stored write.
                session.execute_write(unit_of_work(timeout=self._tx_timeout())(
                    lambda tx: list(tx.run(cypher.load("ping")))))
                bookmarks.record_write(session.last_bookmarks())

        self._retrying(attempt)

    def apply_schema(self, name: str = "schema") -> None:
        """Create the constraints and indexes of `cypher/schema.cypher` if missing (and drop retired ones).

        Safe when several processes start at once on a new store: a statement another process
        settled first (SCHEMA_SETTLED_ELSEWHERE) counts as done. `name` runs another file of
        schema statements the same way (the bench drops the full-text term indexes with one).
        """
        timeout = max(self._tx_timeout(), MAINTENANCE_TIMEOUT)
        with self._outage_as_unavailable():
            for statement in cypher.load_statements(name):
                try:
                    self._driver.execute_query(neo4j.Query(statement, timeout=timeout), database_=self.database)
                except ClientError as exc:
                    if exc.code not in SCHEMA_SETTLED_ELSEWHERE:
                        raise
                    log.info("schema statement settled by another process (%s)", exc.code)
            self._driver.execute_query(neo4j.Query(cypher.load("maintenance/await_indexes"), timeout=timeout),
                                       database_=self.database)

    def wipe_all(self) -> None:
        """Delete every node and edge (tests, benchmarks). Auto-commit: the statement batches itself.
        What earlier writes asked to run after them runs first, so none of it lands in the wiped store."""
        self.settle()
        with self._outage_as_unavailable():
            with self._driver.session(database=self.database) as session:
                session.run(cypher.load("maintenance/wipe_all")).consume()

    def ping(self) -> bool:
        """True when Neo4j answers a trivial query within the timeout."""
        try:
            self.query("ping")
            return True
        except Unavailable:
            return False


#: The one parameter every graphsvc statement takes: a map holding its arguments (`$arg.ids`, …).
ARGUMENTS = "arg"


def statement_arguments(name: str, params: dict[str, Any]) -> dict[str, Any]:
    """The parameters a statement is sent with: its arguments inside ONE map, `$arg`.

    Neo4j 5.26 caches a plan per statement text AND per parameter signature
    (QueryCache.extractParameterTypeMap, ParameterValueTypeHelper.deriveCypherType): each parameter's
    type (a null is ANY, a string STRING, a list of strings LIST<STRING>, any other list LIST<ANY>)
    and, for strings and lists, a size bucket (0, 1, 2-10, 11-100, 101-1000, …;
    internal.cypher.use_parameter_size, on by default). So a pack with 1, 2 or 12 terms, a fence by
    id or by prefix, a 9- or a 90-character Lucene query, a batch of 1 or of 50 each had a plan of
    its own, planned (seconds for the pack) on first use after every Neo4j start, by whichever
    request met it first. A MAP parameter enters that signature as MAP alone, with no size and no
    inner types: with every argument inside one map, each statement has ONE signature and ONE plan,
    whatever the request (tests/integration/test_plan_cache.py holds Neo4j to it), and start-up
    plans each statement once. The planner loses the sizes as estimates; the statements pin their
    access paths with index hints, so the plans do not depend on them.

    The other part of Neo4j's key is whether the transaction already changed something
    (txStateHasChanges): a write's later statements are planned for that case, which
    graphsvc.store.warmup takes into account. `inspect/` statements are for operators to paste
    into Neo4j Browser, so they keep plain parameters.
    """
    return params if name.startswith("inspect/") else {ARGUMENTS: params}


AFTER_COMMIT = "_graphsvc_after_commit"


class Followers:
    """The statements committed writes asked to run after them (`after_commit`), run by one
    background thread per process, each in a write transaction of its own.

    Why not in the request: such a statement is bookkeeping the caller's answer does not depend on
    (the watch markers), and run in line it would cost every write a second transaction and its
    commit (~11 ms p50, 25 ms p95 under sixteen claiming agents), with all of a project's writers
    queued on its one marker node. Here, statements of one name that pile up while the thread works are
    merged: their list parameters are united (so a burst of writes to one project bumps its marker
    once, which is all a watcher needs), every other parameter must be equal to merge. So an
    after-commit statement must mean the same run once on a union as run on each part.

    The write has answered by the time its followers run: a process killed in between leaves them
    unrun (graphsvc.store.changes says what that costs). `settle` waits for the queue to drain
    (tests, and `Database.close`)."""

    def __init__(self, run_one: Callable[[str, dict[str, Any]], None]):
        self._run_one = run_one
        self._changed = threading.Condition()
        self._queued: dict[tuple[Any, ...], tuple[str, dict[str, Any]]] = {}
        self._busy = False
        self._stopping = False
        self._thread: threading.Thread | None = None

    @staticmethod
    def _unites(value: Any) -> bool:
        """A list of strings or integers: united with the same parameter of another run of the statement."""
        return isinstance(value, list) and all(isinstance(item, (str, int)) for item in value)

    def add(self, statements: list[tuple[str, dict[str, Any]]]) -> None:
        """Queue what a committed write asked for; called on the write's own thread after its commit,
        so nothing here may fail."""
        with self._changed:
            for name, params in statements:
                key = (name, tuple(sorted((k, repr(v)) for k, v in params.items() if not self._unites(v))))
                queued = self._queued.setdefault(key, (name, dict(params)))[1]
                for k, v in params.items():
                    if self._unites(v):
                        queued[k] = sorted(set(queued[k]) | set(v), key=repr)
            if self._thread is None and not self._stopping:
                self._thread = threading.Thread(target=self._work, name="graphsvc-after-commit", daemon=True)
                self._thread.start()
            self._changed.notify_all()

    def _work(self) -> None:
        while True:
            with self._changed:
                while not self._queued and not self._stopping:
                    self._changed.wait()
                if not self._queued:
                    return
                batch, self._queued, self._busy = list(self._queued.values()), {}, True
            try:
                for name, params in batch:
                    try:
                        self._run_one(name, params)
                    except Exception:  # the thread outlives any one statement
                        log.exception("%s after a committed write failed", name)
            finally:
                with self._changed:
                    self._busy = False
                    self._changed.notify_all()

    def settle(self, timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        with self._changed:
            while self._queued or self._busy:
                left = deadline - time.monotonic()
                if left <= 0 or self._thread is None:
                    return False
                self._changed.wait(left)
        return True

    def stop(self) -> None:
        with self._changed:
            self._stopping = True
            self._changed.notify_all()


def after_commit(tx: ManagedTransaction, name: str, **params: Any) -> None:
    """Have the named write statement run in a transaction of its own once `tx` (a `Database.write`)
    has committed, in the background (`Followers`); never if it rolls back."""
    statements = getattr(tx, AFTER_COMMIT, None)
    if statements is None:
        statements = []
        setattr(tx, AFTER_COMMIT, statements)
    statements.append((name, params))


#: Called, when set, with each statement's name and whether its transaction had already changed
#: something (the second part of Neo4j's plan key, see `statement_arguments`); the test suite
#: sets it to hold graphsvc.store.warmup to the variants the writes really run.
plan_observer: Callable[[str, bool], None] | None = None


def run(tx: ManagedTransaction, name: str, **params: Any) -> list[neo4j.Record]:
    """Run the named statement inside a managed transaction and fetch every record (none once the
    caller stopped waiting: `Abandoned`, and the transaction rolls back)."""
    check_deadline()
    result = tx.run(cypher.load(name), statement_arguments(name, params))
    records = list(result)
    if plan_observer is not None and not getattr(tx, "_graphsvc_warming", False):
        changed = getattr(tx, "_graphsvc_changed", False)
        plan_observer(name, changed)
        if not changed and result.consume().counters.contains_updates:
            setattr(tx, "_graphsvc_changed", True)
    return records
