"""The one service object every surface (HTTP, MCP, CLI) shares.

Surfaces hand it raw JSON-like data; it validates with the pydantic models,
reads the clock ONCE per call, and delegates to the store (I/O) or the
bootstrap reader + pure pack assembly. Surfaces therefore stay thin and can
never disagree about a rule.
"""

from __future__ import annotations

from typing import Any, Iterable, Iterator

from graphsvc.clock import Clock, system_clock
from graphsvc.store.db import Database
from graphsvc.errors import BadRequest, InvalidInput
from graphsvc.models import BootstrapRequest, CapsuleIn, CapsuleUpdate, IngestBatch, RelateRequest
from graphsvc.validation import parse


class GraphService:
    def __init__(self, db: Database, clock: Clock = system_clock):
        self.db = db
        self.clock = clock
        self._schema_applied = False

    def ensure_schema(self) -> None:
        """Apply `cypher/schema.cypher` once; retried on the next call if Neo4j was down."""
        if not self._schema_applied:
            self.db.apply_schema()
            self._schema_applied = True

    def ready(self) -> bool:
        """Neo4j answers (and the schema is in place)."""
        if not self.db.ping():
            return False
        self.ensure_schema()
        return True

    # -- the product ------------------------------------------------------

    def bootstrap(self, data: Any) -> dict[str, Any]:
        """SPEC §4: the cold-start pack. Bad input → 400 naming the field."""
        from graphsvc.store.bootstrap import build_pack

        request = parse(BootstrapRequest, data if data is not None else {}, BadRequest)
        return build_pack(self.db, request, self.clock())

    # -- writes (SPEC §5) -------------------------------------------------

    def ingest(self, data: Any) -> dict[str, Any]:
        """One capsule, or `{"items": [...]}` (≤ 1000) all-or-nothing."""
        from graphsvc.store.ingest import ingest

        if isinstance(data, dict) and "items" in data:
            items = parse(IngestBatch, data, InvalidInput).items
            ids = ingest(self.db, items, self.clock(), batch=True)
        else:
            item = parse(CapsuleIn, data, InvalidInput)
            ids = ingest(self.db, [item], self.clock(), batch=False)
        return {"ids": ids}

    def relate(self, data: Any) -> dict[str, Any]:
        from graphsvc.store.relate import relate

        return relate(self.db, parse(RelateRequest, data, InvalidInput), self.clock())

    def update(self, capsule_id: str, data: Any) -> dict[str, Any]:
        from graphsvc.store.update import update

        return update(self.db, capsule_id, parse(CapsuleUpdate, data, InvalidInput), self.clock())

    def tombstone(self, capsule_ids: list[str]) -> dict[str, Any]:
        from graphsvc.store.tombstone import tombstone

        return tombstone(self.db, capsule_ids, self.clock())

    # -- reads (SPEC §5) --------------------------------------------------

    def get(self, capsule_ids: list[str]) -> dict[str, Any]:
        from graphsvc.store.reads import get_capsules

        return get_capsules(self.db, capsule_ids, self.clock())

    def list(self, data: Any) -> dict[str, Any]:
        from graphsvc.store.reads import list_capsules

        return list_capsules(self.db, data, self.clock())

    # -- transfer (SPEC §5) -----------------------------------------------

    def export_lines(self) -> Iterator[str]:
        from graphsvc.store.transfer import export_lines

        return export_lines(self.db)

    def import_lines(self, lines: Iterable[str], progress: Any = None) -> dict[str, Any]:
        from graphsvc.store.transfer import import_lines

        return import_lines(self.db, lines, progress=progress)
