"""SPEC §5 export/import: JSON Lines, exact round trip, ids preserved.

Format (one JSON object per line, keys sorted, compact, UTF-8):
  {"capsule": {<every stored property, incl. id and seq>}}   one per capsule, by seq
  {"edge": {"from": "cap-1", "to": "cap-2", "type": "BLOCKS"}} one per edge, by type, from seq, to seq
Instants are UTC with nanoseconds ("2026-12-01T12:00:00.000000000Z") so nothing is
rounded: export → import into an empty database → export is byte-identical.

Import is all-or-nothing: every line is validated first (422 naming `line[n]`,
1-based) and ids that already exist are refused (409; an import never
overwrites) before anything is written. The id counter is then raised to the
largest imported seq (first, so a concurrent ingest can never take an imported
id), and capsules then edges are created with UNWIND in chunks of 5000, one
transaction per chunk: a single transaction for a large file exceeds Neo4j's
transaction memory (db.memory.transaction.total.max). If a chunk fails, the
chunks already written are removed again, so a failed import leaves no capsule
behind (the raised counter stays: ids are never reused). Capsule lines must
come before edge lines, and edges join capsules of the same file.
"""

from __future__ import annotations

import json
import re
import tempfile
from datetime import datetime, timedelta, timezone
from typing import Any, Callable, Iterable, Iterator

from neo4j import ManagedTransaction
from pydantic import AfterValidator, Field, StrictInt, model_validator
from typing_extensions import Annotated

from graphsvc.core.order import from_scratch
from graphsvc.store import blocks_order, maintain
from graphsvc.store.db import Database, run
from graphsvc.store.idempotency import Wrap, within
from graphsvc.errors import Conflict, InvalidInput, Unavailable
from graphsvc.models import DAG_KINDS, CapsuleId, Content, Headline, Kind, ProjectId, Status, StrictModel, Tier
from graphsvc.validation import parse

EXPORT_PAGE = 5000
IMPORT_CHUNK = 5000
EDGE_TYPES = ("BLOCKS", "SUPERSEDES")
TIME_PROPERTIES = ("created_at", "updated_at", "valid_to", "tombstoned_at")

#: ASCII digits only and no trailing newline (`\d` and `$` would let both through to Neo4j's datetime()).
_EXACT_INSTANT = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{9}Z")


# ---------------------------------------------------------------- format


def exact_instant(value: Any) -> str:
    """A driver DateTime as UTC ISO-8601 with all nine fraction digits (nothing rounded)."""
    utc = value.astimezone(timezone.utc)
    nanos = getattr(utc, "nanosecond", utc.microsecond * 1000 if isinstance(utc, datetime) else 0)
    return (f"{utc.year:04d}-{utc.month:02d}-{utc.day:02d}T{utc.hour:02d}:{utc.minute:02d}:"
            f"{int(utc.second):02d}.{nanos:09d}Z")


def check_instant(value: str) -> str:
    if not _EXACT_INSTANT.fullmatch(value):
        raise ValueError("must be a UTC instant like 2026-12-01T12:00:00.000000000Z (as export writes it)")
    try:
        datetime.fromisoformat(value[:19])
    except ValueError:
        raise ValueError("is not a real calendar date/time") from None
    return value


Instant = Annotated[str, AfterValidator(check_instant)]


class ExportedCapsule(StrictModel):
    """One capsule line: the stored properties, with the same rules as ingest."""

    id: CapsuleId
    seq: Annotated[StrictInt, Field(ge=1, le=2**53)]  # well inside Neo4j's 64-bit integers
    project_id: ProjectId
    kind: Kind
    tier: Tier
    headline: Headline
    content: Content
    status: Status | None = None
    created_at: Instant
    updated_at: Instant
    valid_to: Instant | None = None
    tombstoned_at: Instant | None = None
    #: Provenance (docs/keys.md): the API key that last wrote the capsule, and its label.
    written_by: Annotated[str, Field(min_length=1, max_length=100)] | None = None
    written_by_label: Annotated[str, Field(min_length=1, max_length=100)] | None = None

    @model_validator(mode="after")
    def _consistent(self) -> "ExportedCapsule":
        if self.id != f"cap-{self.seq}":
            raise ValueError(f"seq {self.seq} does not match id {self.id} (id must be 'cap-<seq>')")
        if (self.status is not None) != (self.kind in DAG_KINDS):
            raise ValueError("status is required on task/epic capsules and absent on every other kind")
        return self


class ExportedEdge(StrictModel):
    type: Annotated[str, AfterValidator(lambda v: v if v in EDGE_TYPES else _bad_type(v))]
    from_id: CapsuleId = Field(alias="from")
    to_id: CapsuleId = Field(alias="to")

    @model_validator(mode="after")
    def _no_self_loop(self) -> "ExportedEdge":
        if self.from_id == self.to_id:
            raise ValueError(f"a capsule cannot {self.type} itself ({self.from_id})")
        return self


def _bad_type(value: str) -> str:
    raise ValueError(f"must be one of {', '.join(EDGE_TYPES)}")


def _line(record: dict[str, Any]) -> str:
    return json.dumps(record, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


# ---------------------------------------------------------------- export


_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)


def epoch_instant(seconds: int, nanosecond: int) -> str:
    """[epochSeconds, nanosecond] from Cypher as the same exact UTC text as `exact_instant`."""
    utc = _EPOCH + timedelta(seconds=seconds)
    return utc.strftime("%Y-%m-%dT%H:%M:%S.") + f"{nanosecond:09d}Z"


def _capsule_props(props: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in props.items():
        if value is None:
            continue  # an absent instant (the query returns null for it)
        if key in TIME_PROPERTIES and isinstance(value, list):
            out[key] = epoch_instant(value[0], value[1])
        elif hasattr(value, "astimezone"):
            out[key] = exact_instant(value)
        else:
            out[key] = value
    return out


def _edge_lines(db: Database) -> Iterator[str]:
    for edge_type in EDGE_TYPES:
        from_seq, to_seq = 0, 0
        while True:
            page = db.query("transfer/export_edges", type=edge_type, from_seq=from_seq, to_seq=to_seq,
                            limit=EXPORT_PAGE)
            for r in page:
                yield _line({"edge": {"type": edge_type, "from": r["from"], "to": r["to"]}}) + "\n"
            if len(page) < EXPORT_PAGE:
                break
            from_seq, to_seq = page[-1]["from_seq"], page[-1]["to_seq"]


def export_lines(db: Database) -> Iterator[str]:
    """Every capsule (by seq) then every edge (by type, from seq, to seq), one JSON line each.

    A consistent cut while agents write, without holding writers back: the pages are separate
    transactions, so the EDGES are read first (into a temporary file: the format puts capsule lines
    first) and the capsules after them. An edge joins capsules that existed when it was read, and
    capsules are never deleted by the API (a tombstone is a mark), so both ends of every edge in the
    file are among the capsules read later: the file always imports. Each capsule line is one
    committed state of that capsule; an edge added after its pass is not in the file, a capsule
    added after the edges may be (alone). An operator's deletion meanwhile (`graphsvc demo --reset`,
    an import being undone) can still leave an edge without its capsule. Pages by keyset so memory
    stays flat on large stores; lines end with "\n"; the spool is removed when the generator closes.
    """
    with tempfile.TemporaryFile("w+", encoding="utf-8", prefix="graphsvc-export-edges-") as spool:
        for line in _edge_lines(db):
            spool.write(line)
        after = 0
        while True:
            page = db.query("transfer/export_capsules", after=after, limit=EXPORT_PAGE)
            for record in page:
                yield _line({"capsule": _capsule_props(record["props"])}) + "\n"
            if len(page) < EXPORT_PAGE:
                break
            after = page[-1]["props"]["seq"]
        spool.seek(0)
        yield from spool


# ---------------------------------------------------------------- import


class _Parsed:
    def __init__(self) -> None:
        self.capsules: list[dict[str, Any]] = []
        self.kinds: dict[str, str] = {}
        self.line_of: dict[str, int] = {}
        self.edges: dict[str, list[dict[str, str]]] = {edge_type: [] for edge_type in EDGE_TYPES}
        self.seen_edges: set[tuple[str, str, str]] = set()


def _invalid(number: int, path: str, rule: str) -> InvalidInput:
    where = f"line[{number}]" + (f".{path}" if path else "")
    return InvalidInput(f"line {number}: {path + ': ' if path else ''}{rule}", field=where)


def _reparse(model: type, data: Any, number: int, section: str) -> Any:
    try:
        return parse(model, data, InvalidInput)
    except InvalidInput as exc:
        rule = exc.message.split(": ", 1)[1] if exc.field and ": " in exc.message else exc.message
        error = _invalid(number, f"{section}.{exc.field}" if exc.field else section, rule)
        error.details = [{**item, "field": f"line[{number}].{section}.{item['field']}" if item.get("field")
                          else f"line[{number}].{section}"} for item in exc.details or []]
        raise error from None


def split_lines(text: str) -> list[str]:
    """JSON Lines are separated by "\n" only (a trailing "\r" is dropped).

    Not `str.splitlines()`: it also breaks at U+2028, U+2029 and U+0085, which an
    export keeps raw inside JSON strings, and the round trip would fail.
    """
    return [line[:-1] if line.endswith("\r") else line for line in text.split("\n")]


def _take(parsed: _Parsed, number: int, text: str) -> None:
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise _invalid(number, "", f"is not valid JSON ({exc.msg} at column {exc.colno})") from None
    except (ValueError, RecursionError):  # over-long integers, absurd nesting
        raise _invalid(number, "", "is not JSON this service can read (number too long or nesting too deep)") from None
    if not isinstance(data, dict) or len(data) != 1 or next(iter(data)) not in ("capsule", "edge"):
        raise _invalid(number, "", 'must be {"capsule": {...}} or {"edge": {...}}')
    if "capsule" in data:
        if any(parsed.edges.values()):
            raise _invalid(number, "capsule", "capsule lines must all come before the first edge line")
        capsule = _reparse(ExportedCapsule, data["capsule"], number, "capsule")
        if capsule.id in parsed.line_of:
            raise _invalid(number, "capsule.id", f"{capsule.id} already appeared on line {parsed.line_of[capsule.id]}")
        parsed.line_of[capsule.id] = number
        parsed.kinds[capsule.id] = capsule.kind
        parsed.capsules.append(capsule.model_dump(exclude_none=True))
        return
    edge = _reparse(ExportedEdge, data["edge"], number, "edge")
    for end, capsule_id in (("from", edge.from_id), ("to", edge.to_id)):
        if capsule_id not in parsed.kinds:
            raise _invalid(number, f"edge.{end}", f"{capsule_id} is not a capsule of this file (edges join imported capsules)")
        if edge.type == "BLOCKS" and parsed.kinds[capsule_id] not in DAG_KINDS:
            raise _invalid(number, f"edge.{end}", f"{capsule_id} is a '{parsed.kinds[capsule_id]}'; BLOCKS edges join task/epic capsules only")
    key = (edge.type, edge.from_id, edge.to_id)
    if key in parsed.seen_edges:
        raise _invalid(number, "edge", f"duplicate {edge.type} edge {edge.from_id}->{edge.to_id}")
    parsed.seen_edges.add(key)
    parsed.edges[edge.type].append({"from": edge.from_id, "to": edge.to_id})


def _chunks(rows: list[Any], size: int) -> Iterator[list[Any]]:
    for start in range(0, len(rows), size):
        yield rows[start:start + size]


def _claim_ids(tx: ManagedTransaction, parsed: _Parsed) -> None:
    """Raise the id counter, then refuse ids already stored, in ONE write transaction.

    Raising first takes the counter's write lock: an ingest that allocated ids before us has
    committed by the time we check (its nodes are seen), and every later ingest is handed ids
    above the imported ones, so it can never collide with what this import is about to create.
    A refusal rolls the counter back with everything else.
    """
    max_seq = max((capsule["seq"] for capsule in parsed.capsules), default=0)
    run(tx, "transfer/raise_counter", max_seq=max_seq)
    ids = [capsule["id"] for capsule in parsed.capsules]
    for chunk in _chunks(ids, IMPORT_CHUNK * 4):
        taken = [r["id"] for r in run(tx, "transfer/existing_ids", ids=chunk)]
        if taken:
            first = min(taken, key=parsed.line_of.__getitem__)
            raise Conflict(f"line {parsed.line_of[first]}: {first} already exists in this database "
                           f"({len(taken)} id(s) of this chunk do); import never overwrites, "
                           "import into an empty database", field=f"line[{parsed.line_of[first]}].capsule.id")


def _capsule_rows(parsed: _Parsed) -> list[dict[str, Any]]:
    """Node rows with their kind label and maintained fields.

    The imported capsules only join each other, so their BLOCKS graph is ordered from scratch
    (graphsvc.core.order) over their own seqs, and the edges then arrive in order.
    """
    seq_of = {capsule["id"]: capsule["seq"] for capsule in parsed.capsules}
    dag = [capsule["seq"] for capsule in parsed.capsules if capsule["kind"] in DAG_KINDS]
    ord_of, _ = from_scratch(dag, [(seq_of[e["from"]], seq_of[e["to"]]) for e in parsed.edges["BLOCKS"]])
    rows = []
    for capsule in parsed.capsules:
        props = {**capsule, "tokens": maintain.folded_tokens(capsule["headline"], capsule["content"]),
                 "superseded": False}
        if capsule["seq"] in ord_of:
            props["ord"] = ord_of[capsule["seq"]]
        rows.append({"label": maintain.kind_label(capsule["kind"]), "props": props})
    return rows


def _add_blocks(tx: ManagedTransaction, rows: list[dict[str, str]]) -> None:
    blocks_order.lock(tx)
    blocks_order.add_blocks(tx, [(edge["from"], edge["to"]) for edge in rows])


def _refresh(tx: ManagedTransaction, ids: list[str], dag: set[str]) -> None:
    maintain.refresh(tx, superseded=ids, readiness=[capsule_id for capsule_id in ids if capsule_id in dag])


def _steps(parsed: _Parsed) -> list[tuple[Callable[[ManagedTransaction], Any], list[str], int]]:
    """The import's write transactions in order: (work, capsule ids it creates, lines it covers).

    Capsules, then edges, then the maintained state of every imported capsule (it depends on them).
    """
    steps: list[tuple[Callable[[ManagedTransaction], Any], list[str], int]] = []
    for chunk in _chunks(_capsule_rows(parsed), IMPORT_CHUNK):
        steps.append((lambda tx, rows=chunk: run(tx, "transfer/import_capsules", rows=rows),
                      [row["props"]["id"] for row in chunk], len(chunk)))
    for chunk in _chunks(parsed.edges["BLOCKS"], IMPORT_CHUNK * 2):
        steps.append((lambda tx, rows=chunk: _add_blocks(tx, rows), [], len(chunk)))
    for chunk in _chunks(parsed.edges["SUPERSEDES"], IMPORT_CHUNK * 2):
        steps.append((lambda tx, rows=chunk: run(tx, "transfer/import_supersedes", edges=rows), [], len(chunk)))
    dag = {capsule_id for capsule_id, kind in parsed.kinds.items() if kind in DAG_KINDS}
    for chunk in _chunks(list(parsed.kinds), IMPORT_CHUNK):
        steps.append((lambda tx, ids=chunk: _refresh(tx, ids, dag), [], 0))
    return steps


def _write_chunks(db: Database, parsed: _Parsed, progress: Any, written: list[str], seal: Wrap | None = None) -> None:
    """Write capsules then edges; `written` collects the ids of every committed capsule chunk.

    `seal` wraps the LAST transaction (an idempotency key is recorded when the import completes).
    """
    steps = _steps(parsed)
    for index, (work, ids, lines) in enumerate(steps):
        db.write(within(seal if index == len(steps) - 1 else None, work))
        written.extend(ids)
        if progress is not None:
            progress.update(lines)


def _undo(db: Database, ids: list[str]) -> None:
    """Remove the capsules an interrupted import committed, and only those.

    Not every id of the file: a concurrent import of the same ids may have won the race
    for some of them, and its capsules must not be deleted by our failure.
    """
    if not ids:
        return
    try:
        for chunk in _chunks(ids, IMPORT_CHUNK):
            db.write(lambda tx: maintain.remove(tx, chunk, lambda: run(tx, "transfer/remove_imported", ids=chunk)))
    except Unavailable:
        raise Unavailable(
            f"the import was interrupted and Neo4j could not be reached to undo it: capsules {ids[0]}..{ids[-1]} "
            "of this file may be partly stored; remove them (cypher/transfer/remove_imported, with "
            "`:param arg => {ids: [...]}`), run `graphsvc verify --repair`, and import again"
        ) from None


def import_lines(db: Database, lines: Iterable[str | bytes], progress: Any = None,
                 seal: Callable[[dict[str, Any]], Wrap] | None = None) -> dict[str, Any]:
    """Validate every line, refuse existing ids, then write in chunked transactions (undone on failure).

    `progress` is anything with `update(n)` (e.g. tqdm), advanced once per written line.
    Blank lines are ignored. `seal(summary)` gives the wrap for the last write transaction
    (an idempotency key is stored with the summary the import is about to answer).
    """
    parsed = _Parsed()
    for number, raw in enumerate(lines, start=1):
        text = raw.decode("utf-8") if isinstance(raw, bytes) else raw
        if text.strip():
            _take(parsed, number, text)
    summary = {"capsules": len(parsed.capsules), "edges": sum(len(rows) for rows in parsed.edges.values())}
    last = seal(summary) if seal is not None else None
    db.write(within(last if not parsed.capsules else None, lambda tx: _claim_ids(tx, parsed)))
    written: list[str] = []
    try:
        _write_chunks(db, parsed, progress, written, last)
    except BaseException:
        _undo(db, written)
        raise
    return summary
