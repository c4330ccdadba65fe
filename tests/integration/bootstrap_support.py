"""Shared helpers for the memory_bootstrap integration tests (real Neo4j, real service).

Capsules are written through GraphService (ingest / update / relate / tombstone) with a
pinned clock per write, so `updated_at` (and therefore decay order) is chosen by the test.
"""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone
from typing import Any, Callable

import neo4j
from neo4j import ManagedTransaction

from graphsvc.clock import fixed_clock
from graphsvc.store.db import Database
from graphsvc.service import GraphService

T0 = datetime(2026, 6, 1, 12, 0, tzinfo=timezone.utc)
NOW = T0 + timedelta(days=30)


class Store:
    """Write capsules at chosen instants and read packs at NOW (or another pinned instant)."""

    def __init__(self, db: Database):
        self.db = db

    def at(self, when: datetime) -> GraphService:
        return GraphService(self.db, clock=fixed_clock(when))

    def put(self, kind: str, content: str, *, project_id: str = "nott", age_days: float = 10,
            **fields: Any) -> str:
        """Ingest one capsule as of NOW - age_days; returns its id."""
        when = NOW - timedelta(days=age_days)
        body = {"project_id": project_id, "kind": kind, "content": content, **fields}
        return self.at(when).ingest(body)["ids"][0]

    def many(self, items: list[dict[str, Any]], *, age_days: float = 10) -> list[str]:
        return self.at(NOW - timedelta(days=age_days)).ingest({"items": items})["ids"]

    def done(self, capsule_id: str) -> None:
        self.at(NOW - timedelta(days=1)).update(capsule_id, {"status": "done"})

    def tombstone(self, *capsule_ids: str) -> None:
        self.at(NOW - timedelta(days=1)).tombstone(list(capsule_ids))

    def supersede(self, new: str, old: str) -> None:
        self.at(NOW).relate({"add": [{"type": "SUPERSEDES", "from": new, "to": old}]})

    def block(self, blocker: str, blocked: str) -> None:
        self.at(NOW).relate({"add": [{"type": "BLOCKS", "from": blocker, "to": blocked}]})

    def pack(self, when: datetime = NOW, **request: Any) -> dict[str, Any]:
        return self.at(when).bootstrap(request)


def ids(rows: list[dict[str, Any]] | None) -> list[str]:
    return [row["id"] for row in rows or []]


def ready_ids(pack: dict[str, Any]) -> list[str]:
    """The ready section in order: next action first, then the ready rows."""
    ready = pack["ready"]
    head = [ready["next_action"]["id"]] if "next_action" in ready else []
    return head + ids(ready.get("ready"))


def surfaced(pack: dict[str, Any]) -> set[str]:
    """Every capsule id anywhere in the pack's sections."""
    found = set(ids(pack.get("constraints"))) | set(ids(pack.get("decisions"))) | set(ids(pack.get("traps")))
    found |= set(ready_ids(pack)) if "ready" in pack else set()
    found |= set(pack.get("ready", {}).get("cycle", []))
    return found


def canonical_json(pack: dict[str, Any]) -> str:
    return json.dumps(pack, sort_keys=True)


class _CountingTransaction:
    """A real managed transaction that counts the statements run through it."""

    def __init__(self, tx: ManagedTransaction, counter: "CountingDatabase"):
        self._tx = tx
        self._counter = counter

    def run(self, query: str, parameters: dict[str, Any] | None = None, **kwargs: Any) -> neo4j.Result:
        self._counter.statements += 1
        return self._tx.run(query, parameters, **kwargs)


class CountingDatabase(Database):
    """The real Database (real driver, real Neo4j) that counts round trips and statements.

    A round trip is one call that goes to Neo4j and back: `query` (one auto-committed
    statement) or `read`/`write` (one transaction, however many statements it runs).
    """

    def __init__(self, *args: Any, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.round_trips = 0
        self.statements = 0

    def query(self, name: str, **params: Any) -> list[neo4j.Record]:
        self.round_trips += 1
        self.statements += 1
        return super().query(name, **params)

    def read(self, work: Callable[[ManagedTransaction], Any]) -> Any:
        self.round_trips += 1
        return super().read(lambda tx: work(_CountingTransaction(tx, self)))  # type: ignore[arg-type]

    def write(self, work: Callable[[ManagedTransaction], Any]) -> Any:
        self.round_trips += 1
        return super().write(lambda tx: work(_CountingTransaction(tx, self)))  # type: ignore[arg-type]
