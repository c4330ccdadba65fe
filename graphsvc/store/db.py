"""The one place that talks to the Neo4j driver.

Follows the driver manual's idioms: `execute_query` for single statements and
managed transactions (`execute_read` / `execute_write`) for units of work that
must be all-or-nothing. Every driver outage is turned into `Unavailable`
(HTTP 503 + Retry-After) within the configured timeout instead of hanging, and
credentials never appear in the messages.
"""

from __future__ import annotations

import logging
import re
from contextlib import contextmanager
from typing import Any, Callable, Iterator, TypeVar

import neo4j
from neo4j import GraphDatabase, ManagedTransaction, RoutingControl
from neo4j.exceptions import ClientError, ConfigurationError, DriverError, ServiceUnavailable, SessionExpired, TransientError

from graphsvc.store import cypher
from graphsvc.config import InvalidNeo4jUri, Settings
from graphsvc.errors import Conflict, Unavailable
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


class Database:
    """A driver plus the database name, with outage handling and named statements."""

    def __init__(self, uri: str, user: str, password: str, database: str = "neo4j", timeout: float = 2.0):
        self.uri = redact_uri(uri)  # it appears in 503 messages and logs
        self.database = database
        self.timeout = timeout
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
                liveness_check_timeout=0,
                notifications_min_severity="OFF",
            )
        except (ConfigurationError, ValueError) as exc:
            # The driver's message quotes the whole URI, userinfo (a password?) included.
            hint = "; put the credentials in NEO4J_USER / NEO4J_PASSWORD" if self.uri != uri else ""
            reason = _clean_reason(exc, uri, self.uri).rstrip(".")
            raise InvalidNeo4jUri(f"NEO4J_URI {self.uri} is not usable: {reason}{hint}") from None

    @classmethod
    def from_settings(cls, settings: Settings) -> "Database":
        return cls(
            settings.neo4j_uri,
            settings.neo4j_user,
            settings.neo4j_password.get_secret_value(),
            settings.neo4j_database,
            settings.graphsvc_neo4j_timeout,
        )

    def close(self) -> None:
        self._driver.close()

    @contextmanager
    def _outage_as_unavailable(self) -> Iterator[None]:
        try:
            with neo4j_work():  # metrics: work in flight, driver errors by class
                yield
        except (ServiceUnavailable, SessionExpired) as exc:
            log.warning("neo4j unavailable at %s: %s", self.uri, type(exc).__name__)
            raise Unavailable(f"Neo4j at {self.uri} is not reachable; retry shortly.") from None
        except TransientError as exc:
            raise Unavailable(f"Neo4j is busy ({exc.code}); retry shortly.") from None
        except DriverError as exc:  # acquisition timeouts and friends
            log.warning("neo4j driver error: %s", type(exc).__name__)
            raise Unavailable(f"Neo4j at {self.uri} did not answer in time; retry shortly.") from None
        except OSError:
            raise Unavailable(f"Neo4j at {self.uri} is not reachable; retry shortly.") from None
        except ClientError as exc:
            code = exc.code or ""
            # Refused credentials (or a login rate limit) and a missing database are the
            # deployment's fault, not the caller's: a 503 for the caller, the code (never the
            # credentials) for the operator.
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

    def query(self, name: str, **params: Any) -> list[neo4j.Record]:
        """Run the named read statement `cypher/<name>.cypher` with parameters."""
        with self._outage_as_unavailable():
            records, _, _ = self._driver.execute_query(
                cypher.load(name), params, database_=self.database, routing_=RoutingControl.READ
            )
        return records

    def read(self, work: Callable[[ManagedTransaction], T]) -> T:
        """One read transaction (a consistent snapshot for multi-statement reads)."""
        with self._outage_as_unavailable():
            with self._driver.session(database=self.database) as session:
                return session.execute_read(work)

    def write(self, work: Callable[[ManagedTransaction], T]) -> T:
        """One write transaction: everything in `work` commits together or not at all."""
        with self._outage_as_unavailable():
            with self._driver.session(database=self.database) as session:
                return session.execute_write(work)

    def apply_schema(self) -> None:
        """Create the constraints and indexes of `cypher/schema.cypher` if missing."""
        with self._outage_as_unavailable():
            for statement in cypher.load_statements("schema"):
                self._driver.execute_query(statement, database_=self.database)
            self._driver.execute_query(cypher.load("maintenance/await_indexes"), database_=self.database)

    def wipe_all(self) -> None:
        """Delete every node and edge (tests, benchmarks). Auto-commit: the statement batches itself."""
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


def run(tx: ManagedTransaction, name: str, **params: Any) -> list[neo4j.Record]:
    """Run the named statement inside a managed transaction and fetch every record."""
    return list(tx.run(cypher.load(name), params))
