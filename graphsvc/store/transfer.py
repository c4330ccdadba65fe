"""SPEC §5 export/import: JSON Lines, exact round trip, ids preserved.

Format (one JSON object per line, keys sorted, compact, UTF-8):
  {"capsule": {<every stored property, incl. id and seq>}}   one per capsule, by seq
  {"edge": {"from": "cap-1", "to": "cap-2", "type": "BLOCKS"}} one per edge, by type, from seq, to seq
  {"alias": {"term": "postgres", "aliases": ["pg"], "project_prefix"?: "p"}}
                                                             one per taught alias set (SPEC §10), by scope, term
Instants are UTC with nanoseconds ("2026-12-01T12:00:00.000000000Z") so nothing is
rounded: export → import into an empty database → export is byte-identical.

Import (graphsvc import, POST /v1/capsules/import) reads its file in three passes and never
holds it whole: an HTTP body is spooled to a temporary file first, and the passes keep only flat
arrays of seqs, kinds and edge ends (`_Index`), so memory grows by a few bytes per line.
1. Validate every line (422 naming `line[n]`, 1-based; nothing touched). Capsule lines must come
   before edge lines, edges join capsules of the same file, and alias lines come last (a file
   holds few of them: they are kept as they are). Alias lines meet memory_alias's rules here: an
   alias that folds to its own term, or more than 32 aliases for one term and scope once the
   file's lines are merged, is a 422 naming its line; so is a set that would pass 32 once merged
   with the stored one, read before anything is written (and checked again when written, 3.).
2. Raise the id counter to the largest seq of the file (first, so an ingest can never take an id
   of the file from here on; it takes the counter's lock, so an ingest that took ids before has
   committed and is seen), then compare the file's capsules with the store, IMPORT_CHUNK at a time.
   A capsule is ALREADY PRESENT when a stored capsule has its id and the same exported
   representation: every field of the export line (id, seq, project_id, kind, tier, headline,
   content, status, the four instants to the nanosecond, the writer, a handoff's agent, a claim's
   lease), compared as `export` would write them.
   The fields the service maintains (kind label, tokens, superseded, readiness, ord, counted,
   census) are not compared: they are derived from the graph and recomputed by the import's last step. A
   stored capsule with other fields is a 409 naming its line, and nothing is written (the raised
   counter stays: ids are never reused). So is a BLOCKS order position (`ord`) the file's order
   gives one of its new tasks that a stored capsule holds already, which happens only when some
   of the file's capsules were stored by something other than an earlier run of this import.
   One read first asks whether any stored capsule has a seq or an ord within the file's range of
   seqs; when none has (an import into a new store), the chunks are still read again (the file
   must not have changed) but not looked up.
3. Write: first the alias sets, in one transaction that locks their nodes (graphsvc.store.aliases),
   checks the 32 again on the sets as locked and merges the file's into them (teaching a set twice
   changes nothing). A memory_alias that grew a set since pass 1's read is seen there: the 422
   names the line and, as for a 409, only the raised counter was written; one that comes after
   meets the imported set in its own check. Then, one transaction per chunk, the capsules not yet
   stored (UNWIND, IMPORT_CHUNK rows: a single transaction for a large file exceeds
   db.memory.transaction.total.max), the edges not yet stored (MERGE; BLOCKS through
   graphsvc.store.blocks_order), then the maintained state refreshed where it must be.
   The file holds every edge its capsules have (edges join capsules of the file, and a capsule
   created here has no other edge yet), so each capsule is created with its maintained fields as
   they are once the file's edges are stored (`_Index.derived`: superseded, open_blockers, ready,
   counted, census, by the rules of maintain/expected), and its counts are added to its tallies in
   the same transaction (maintain.count_created), as an ingest does. The refresh (maintain.refresh, which
   locks and recomputes from the graph) then covers only the capsules that can differ: those an
   edge of the file points at (SUPERSEDES targets, and BLOCKS targets with what the superseded ones
   block), because another writer may have changed a source of that edge before the edge existed
   (a tombstone, a status) and refreshed nothing through it; and every capsule found already present
   (an earlier run wrote it, and may have stopped before its edges). Any other capsule's fields
   depend on its own fields and its incoming edges only, and every writer that changes those after
   its creation refreshes it. The answer counts what was written and, apart, what was
   `already_present`; `aliases` when the file has alias lines.

An import that stops part way (its process killed, Neo4j gone, its HTTP client gone: see
graphsvc.watch) keeps the chunks it committed, and running it again completes it: what it wrote
is found already present. It is not undone on failure: an undo cannot run when the process is
killed or Neo4j is down (the cases that need it most), would throw away work a re-run reuses,
and would race a concurrent run of the same file; a re-run is the one recovery, whatever stopped
it. Until the re-run, the capsules written so far are readable but their maintained state (and
the permutation of the BLOCKS order) may be incomplete (a capsule counts as superseded or blocked
before the edge that makes it so is stored): `graphsvc verify` reports it. The BLOCKS
order of the file's tasks is computed from scratch over the whole file (graphsvc.core.order.ranks),
the same on every run, so the chunks of two runs fit together: a writer that reorders BLOCKS in
between only permutes the ords the stored capsules hold, so the ords the re-run gives the rest
are still free (pass 2 checks it). Every transaction carries the query timeout (graphsvc.store.db)
and `watch.step()` runs before each, so a surface can stop the import between two of them.
"""

from __future__ import annotations

import hashlib
import json
import re
import tempfile
from array import array
from concurrent.futures import ThreadPoolExecutor
from contextlib import closing
from bisect import bisect_left
from datetime import datetime, timedelta, timezone
from typing import Any, BinaryIO, Callable, Iterable, Iterator

from neo4j import ManagedTransaction
from pydantic import AfterValidator, Field, StrictInt, model_validator
from typing_extensions import Annotated

from graphsvc.core.order import ranks
from graphsvc.core.retrieve import alias_key
from graphsvc.store import aliases, blocks_order, changes, maintain, migrate
from graphsvc.store.db import Database, run
from graphsvc.store.idempotency import Wrap, within
from graphsvc.errors import BadRequest, Conflict, InvalidInput
from graphsvc.models import (DAG_KINDS, MAX_ALIASES, Agent, AliasRequest, AliasSet, CapsuleId, Content, Headline, Kind,
                             ProjectId, Status, StrictModel, Tier)
from graphsvc.validation import parse
from graphsvc.watch import Watch

EXPORT_PAGE = 5000
IMPORT_CHUNK = 5000
EDGE_TYPES = ("BLOCKS", "SUPERSEDES")
TIME_PROPERTIES = ("created_at", "updated_at", "valid_to", "tombstoned_at", "lease_until")

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
    #: A handoff's agent (SPEC §11): what finds an agent's previous handoff in a restored store.
    agent: Agent | None = None
    #: A claim's lease (SPEC §12), as it stood at export (live or expired): who, until when, and the API
    #: key that took it, if one did.
    lease_agent: Agent | None = None
    lease_until: Instant | None = None
    lease_key: Annotated[str, Field(min_length=1, max_length=100)] | None = None

    @model_validator(mode="after")
    def _consistent(self) -> "ExportedCapsule":
        if (self.lease_agent is None) != (self.lease_until is None):
            raise ValueError("lease_agent and lease_until come together (a claim's lease) or not at all")
        if self.lease_agent is None and self.lease_key is not None:
            raise ValueError("lease_key belongs to a lease: it needs lease_agent and lease_until")
        if self.lease_agent is not None and (self.kind not in DAG_KINDS or self.status == "done"
                                             or self.tombstoned_at is not None):
            raise ValueError("only an open, not tombstoned task or epic can carry a lease (lease_agent, "
                             "lease_until): marking a node done or tombstoning it ends its lease")
        if self.id != f"cap-{self.seq}":
            raise ValueError(f"seq {self.seq} does not match id {self.id} (id must be 'cap-<seq>')")
        if (self.status is not None) != (self.kind in DAG_KINDS):
            raise ValueError("status is required on task/epic capsules and absent on every other kind")
        if self.agent is not None and self.kind != "handoff":
            raise ValueError("agent is recorded on handoff capsules only")
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


def _edge_lines(db: Database, watch: Watch) -> Iterator[str]:
    for edge_type in EDGE_TYPES:
        from_seq, to_seq = 0, 0
        while True:
            watch.step()
            page = db.query("transfer/export_edges", type=edge_type, from_seq=from_seq, to_seq=to_seq,
                            limit=EXPORT_PAGE)
            for r in page:
                yield _line({"edge": {"type": edge_type, "from": r["from"], "to": r["to"]}}) + "\n"
            if len(page) < EXPORT_PAGE:
                break
            from_seq, to_seq = page[-1]["from_seq"], page[-1]["to_seq"]


def export_lines(db: Database, watch: Watch | None = None) -> Iterator[str]:
    """Every capsule (by seq) then every edge (by type, from seq, to seq), one JSON line each.

    A consistent cut while agents write, without holding writers back: the pages are separate
    transactions, so the EDGES are read first (into a temporary file: the format puts capsule lines
    first) and the capsules after them. An edge joins capsules that existed when it was read, and
    capsules are never deleted by the API (a tombstone is a mark), so both ends of every edge in the
    file are among the capsules read later: the file always imports. Each capsule line is one
    committed state of that capsule; an edge added after its pass is not in the file, a capsule
    added after the edges may be (alone). An operator's deletion meanwhile (`graphsvc demo --reset`,
    `remove_imported`) can still leave an edge without its capsule. Pages by keyset so memory
    stays flat on large stores; lines end with "\n"; the spool is removed when the generator closes.
    `watch.step()` runs before each page's transaction (graphsvc.watch: a surface stops the export
    when its client leaves).
    """
    watch = watch if watch is not None else Watch()
    with tempfile.TemporaryFile("w+", encoding="utf-8", prefix="graphsvc-export-edges-") as spool:
        for line in _edge_lines(db, watch):
            spool.write(line)
        after = 0
        while True:
            watch.step()
            page = db.query("transfer/export_capsules", after=after, limit=EXPORT_PAGE)
            for record in page:
                yield _line({"capsule": _capsule_props(record["props"])}) + "\n"
            if len(page) < EXPORT_PAGE:
                break
            after = page[-1]["props"]["seq"]
        spool.seek(0)
        yield from spool
    watch.step()
    for alias_set in aliases.export_rows(db):
        yield _line({"alias": alias_set}) + "\n"


# ---------------------------------------------------------------- import

#: The longest line an import reads: a capsule's content is at most 64 KiB of text, which JSON
#: escapes (a \uXXXX surrogate pair per astral character) can make about six times longer.
MAX_LINE_BYTES = 2 * 1024 * 1024
#: How many lines the validation pass handles between two `watch.step()` calls.
STEP_LINES = 2000


class Source:
    """The JSON Lines an import reads in passes (validate, check the store, write): reopened per pass.

    `digest` is the SHA-256 an idempotency key compares (of the body as sent, or of the lines
    joined by "\\n" for lines given in memory).
    """

    def __init__(self, reopen: Callable[[], Iterator[str | bytes]], digest: str):
        self._reopen = reopen
        self.digest = digest

    @classmethod
    def of_lines(cls, lines: Iterable[str | bytes]) -> "Source":
        """Lines already in memory (tests, small files, the stateful oracle)."""
        held = list(lines)
        digest = hashlib.sha256()
        for number, line in enumerate(held):
            if number:
                digest.update(b"\n")
            digest.update(line if isinstance(line, bytes) else line.encode("utf-8", "surrogatepass"))
        return cls(lambda: iter(held), digest.hexdigest())

    @classmethod
    def of_file(cls, file: BinaryIO, digest: str = "") -> "Source":
        """A seekable binary file (an HTTP body spooled to disk, a file on disk): read line by line,
        never whole; lines end at b"\\n" only (see `split_lines`)."""

        def reopen() -> Iterator[bytes]:
            file.seek(0)
            number = 0
            while True:
                line = file.readline(MAX_LINE_BYTES + 1)
                if not line:
                    return
                number += 1
                if len(line) > MAX_LINE_BYTES and not (len(line) == MAX_LINE_BYTES + 1 and line.endswith(b"\n")):
                    raise _invalid(number, "", f"is longer than {MAX_LINE_BYTES} bytes (no capsule is that long)")
                yield line[:-1] if line.endswith(b"\n") else line

        return cls(reopen, digest)

    def numbered(self) -> Iterator[tuple[int, str]]:
        """(1-based line number, text) of every line that is not blank; a trailing "\\r" is dropped."""
        for number, raw in enumerate(self._reopen(), start=1):
            if isinstance(raw, bytes):
                try:
                    raw = raw.decode("utf-8")
                except UnicodeDecodeError:
                    raise BadRequest(f"line {number} is not UTF-8 text; send the export's JSON Lines",
                                     field=f"line[{number}]") from None
            text = raw[:-1] if raw.endswith("\r") else raw
            if text.strip():
                yield number, text


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
    """JSON Lines are separated by "\\n" only (a trailing "\\r" is dropped).

    Not `str.splitlines()`: it also breaks at U+2028, U+2029 and U+0085, which an
    export keeps raw inside JSON strings, and the round trip would fail.
    """
    return [line[:-1] if line.endswith("\r") else line for line in text.split("\n")]


def _record(number: int, text: str) -> dict[str, Any]:
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise _invalid(number, "", f"is not valid JSON ({exc.msg} at column {exc.colno})") from None
    except (ValueError, RecursionError):  # over-long integers, absurd nesting
        raise _invalid(number, "", "is not JSON this service can read (number too long or nesting too deep)") from None
    if not isinstance(data, dict) or len(data) != 1 or next(iter(data)) not in ("capsule", "edge", "alias"):
        raise _invalid(number, "", 'must be {"capsule": {...}}, {"edge": {...}} or {"alias": {...}}')
    return data


def _capsule_of(number: int, data: dict[str, Any]) -> dict[str, Any]:
    """The capsule as stored and exported (the model's dump: absent optional fields left out)."""
    return _reparse(ExportedCapsule, data["capsule"], number, "capsule").model_dump(exclude_none=True)


_TOMBSTONED, _DONE = 1, 2
_SUPERSEDES_TARGET, _BLOCKS_TARGET = 1, 2


class _Derived:
    """What `_Index.derived` computes, per capsule in file order: `superseded` (0/1), `open_blockers`
    (of a task/epic) and `targets` (_SUPERSEDES_TARGET, _BLOCKS_TARGET: the file has such an edge into it)."""

    def __init__(self, superseded: bytearray, open_blockers: array, targets: bytearray):
        self.superseded = superseded
        self.open_blockers = open_blockers
        self.targets = targets


class _Index:
    """What the validation pass keeps of a file, in flat arrays (a few bytes per capsule and edge,
    so a file of millions of lines is checked in bounded memory): each capsule's seq, kind and
    line in file order, and each edge's ends by type.

    A file in export order (capsules by ascending seq, edges by type, from seq, to seq) proves
    that no id or edge repeats by its order alone; a file in any other order falls back to a set
    (the memory bound is for files in export order).
    """

    def __init__(self) -> None:
        self.seqs = array("q")
        self.lines = array("q")
        self.kinds = bytearray()
        #: Per capsule, whether it is tombstoned (_TOMBSTONED) or done (_DONE): with the edges, what
        #: decides whether it supersedes or blocks what it points at (`derived`).
        self.flags = bytearray()
        self.kind_names: list[str] = []
        self.lines_total = 0
        self._line_of_seq: dict[int, int] | None = None
        self._sorted: array | None = None
        self._position: array | None = None
        self.edges: dict[str, tuple[array, array]] = {t: (array("q"), array("q")) for t in EDGE_TYPES}
        self._last_edge: tuple[int, int, int] | None = None
        self._edge_keys: set[tuple[int, int, int]] | None = None
        self.aliases: list[AliasRequest] = []
        self.alias_lines: list[int] = []
        #: The capsule lines' chunking (IMPORT_CHUNK when the file was validated) and a digest of
        #: each chunk's text: the later passes read the lines again and must read the lines pass 1
        #: validated (a file on disk can change between passes).
        self.chunk_size = IMPORT_CHUNK
        self.chunk_digests: list[bytes] = []
        self._chunk_hash = hashlib.blake2b(digest_size=16)
        #: Every capsule line's validated form equals its JSON without null fields, so the later
        #: passes take the decoded line as it is instead of validating it again.
        self.exact = True

    @property
    def sealed(self) -> bool:
        return self._sorted is not None

    def is_dag(self, index: int) -> bool:
        return self.kind_names[self.kinds[index]] in DAG_KINDS

    def add_capsule(self, number: int, capsule: dict[str, Any]) -> None:
        if self.sealed:
            raise _invalid(number, "capsule", "capsule lines must all come before the first edge line")
        seq = capsule["seq"]
        if self._line_of_seq is None and self.seqs and seq <= self.seqs[-1]:
            self._line_of_seq = dict(zip(self.seqs, self.lines))
        if self._line_of_seq is not None:
            if seq in self._line_of_seq:
                raise _invalid(number, "capsule.id", f"{capsule['id']} already appeared on line {self._line_of_seq[seq]}")
            self._line_of_seq[seq] = number
        if capsule["kind"] not in self.kind_names:
            self.kind_names.append(capsule["kind"])
        self.seqs.append(seq)
        self.lines.append(number)
        self.kinds.append(self.kind_names.index(capsule["kind"]))
        self.flags.append((_TOMBSTONED if capsule.get("tombstoned_at") is not None else 0)
                          | (_DONE if capsule.get("status") == "done" else 0))

    def hash_capsule_line(self, text: str) -> None:
        """Add a capsule line's text to its chunk's digest (call after `add_capsule`)."""
        self._chunk_hash.update(text.encode("utf-8", "surrogatepass") + b"\n")
        if len(self.seqs) % self.chunk_size == 0:
            self.chunk_digests.append(self._chunk_hash.digest())
            self._chunk_hash = hashlib.blake2b(digest_size=16)

    def seal(self) -> None:
        """The capsule section is complete: index the seqs for the edges' look-ups."""
        if len(self.seqs) % self.chunk_size:
            self.chunk_digests.append(self._chunk_hash.digest())
        if self._line_of_seq is None:
            self._sorted = self.seqs
        else:
            order = sorted(range(len(self.seqs)), key=self.seqs.__getitem__)
            self._sorted = array("q", (self.seqs[i] for i in order))
            self._position = array("q", order)
            self._line_of_seq = None

    def index_of(self, seq: int) -> int:
        """The capsule's position in file order, or -1 when the file has no such capsule."""
        assert self._sorted is not None
        at = bisect_left(self._sorted, seq)
        if at == len(self._sorted) or self._sorted[at] != seq:
            return -1
        return self._position[at] if self._position is not None else at

    def add_edge(self, number: int, edge: "ExportedEdge") -> None:
        if not self.sealed:
            self.seal()
        ends = []
        for end, capsule_id in (("from", edge.from_id), ("to", edge.to_id)):
            index = self.index_of(int(capsule_id[4:]))
            if index < 0:
                raise _invalid(number, f"edge.{end}", f"{capsule_id} is not a capsule of this file (edges join imported capsules)")
            if edge.type == "BLOCKS" and not self.is_dag(index):
                raise _invalid(number, f"edge.{end}", f"{capsule_id} is a '{self.kind_names[self.kinds[index]]}'; "
                               "BLOCKS edges join task/epic capsules only")
            ends.append(self.seqs[index])
        key = (EDGE_TYPES.index(edge.type), ends[0], ends[1])
        if self._edge_keys is None and self._last_edge is not None and key <= self._last_edge:
            self._edge_keys = {(EDGE_TYPES.index(t), a, b) for t in EDGE_TYPES for a, b in zip(*self.edges[t])}
        if self._edge_keys is not None:
            if key in self._edge_keys:
                raise _invalid(number, "edge", f"duplicate {edge.type} edge {edge.from_id}->{edge.to_id}")
            self._edge_keys.add(key)
        self._last_edge = key
        self.edges[edge.type][0].append(ends[0])
        self.edges[edge.type][1].append(ends[1])

    def edge_count(self) -> int:
        return sum(len(sources) for sources, _ in self.edges.values())

    def derived(self) -> "_Derived":
        """The maintained fields each capsule has once the file's edges are stored, computed from the
        file alone (the rules of maintain/expected), and which capsules an edge of the file points at."""
        count = len(self.seqs)
        superseded = bytearray(count)
        targets = bytearray(count)
        for a, b in zip(*self.edges["SUPERSEDES"]):
            source, target = self.index_of(a), self.index_of(b)
            targets[target] |= _SUPERSEDES_TARGET
            if not self.flags[source] & _TOMBSTONED:
                superseded[target] = 1
        open_blockers = array("i", bytes(count * array("i").itemsize))
        for a, b in zip(*self.edges["BLOCKS"]):
            source, target = self.index_of(a), self.index_of(b)
            targets[target] |= _BLOCKS_TARGET
            if not self.flags[source] & (_TOMBSTONED | _DONE) and not superseded[source]:
                open_blockers[target] += 1
        return _Derived(superseded, open_blockers, targets)

    def ords(self) -> dict[str, Any]:
        """The BLOCKS order of the file's tasks/epics from scratch (graphsvc.core.order.ranks):
        `ord_of(seq)` for each; a permutation of their own seqs, the same on every run."""
        dag = array("q", (seq for index, seq in enumerate(self.seqs) if self.is_dag(index)))
        if self._position is not None:  # a file out of seq order (in export order they come sorted)
            dag = array("q", sorted(dag))
        sources, targets = self.edges["BLOCKS"]
        rank = ranks(len(dag), array("q", (bisect_left(dag, a) for a in sources)),
                     array("q", (bisect_left(dag, b) for b in targets)))
        return {"dag": dag, "rank": rank}


def _validate(source: Source, watch: Watch) -> _Index:
    """Pass 1: every line against the format's rules (422 naming the first bad line)."""
    index = _Index()
    for count, (number, text) in enumerate(source.numbered()):
        if count % STEP_LINES == 0:
            watch.step()
        index.lines_total += 1
        data = _record(number, text)
        if "alias" in data:
            alias_set = _reparse(AliasSet, data["alias"], number, "alias").model_dump(exclude_none=True)
            request = _reparse(AliasRequest, alias_set, number, "alias")
            refused = aliases.self_alias(request)
            if refused is not None:
                raise _invalid(number, f"alias.aliases[{refused[0]}]", refused[1])
            index.aliases.append(request)
            index.alias_lines.append(number)
            continue
        if index.aliases:
            raise _invalid(number, next(iter(data)), "alias lines must all come after the capsule and edge lines")
        if "capsule" in data:
            capsule = _capsule_of(number, data)
            index.add_capsule(number, capsule)
            index.hash_capsule_line(text)
            if index.exact and capsule != _as_sent(data):
                index.exact = False
        else:
            index.add_edge(number, _reparse(ExportedEdge, data["edge"], number, "edge"))
    if not index.sealed:
        index.seal()
    _check_alias_counts(index, {})
    return index


def _check_alias_counts(index: _Index, stored: dict[str, list[str]]) -> None:
    """The alias lines merged in file order over the `stored` sets (graphsvc.store.aliases.stored_sets):
    422 naming the first line that leaves a term more than MAX_ALIASES aliases in its scope. Run on
    the file alone in pass 1, over the store before the first write, so such a file writes nothing,
    and over the locked sets in the transaction that writes them (`_write_aliases`)."""
    sets: dict[str, list[str]] = {}
    for number, request in zip(index.alias_lines, index.aliases):
        key = aliases.node_key(request)
        sets[key] = aliases.merged(sets.get(key, stored.get(key, [])), request)
        if len(sets[key]) > MAX_ALIASES:
            raise _invalid(number, "alias.aliases", aliases.too_many(alias_key(request.term), len(sets[key])))


def _write_aliases(tx: ManagedTransaction, index: _Index) -> None:
    """The file's alias sets merged into the stored ones, checked on the sets as locked: a concurrent
    memory_alias either committed before (and is counted here) or waits and meets the merged set."""
    _check_alias_counts(index, aliases.lock_sets(tx, index.aliases))
    aliases.import_sets(tx, index.aliases)


def _check_stored_aliases(db: Database, index: _Index) -> None:
    if index.aliases:
        keys = sorted({aliases.node_key(request) for request in index.aliases})
        _check_alias_counts(index, db.read(lambda tx: aliases.stored_sets(tx, keys)))


def _ord(order: dict[str, Any], seq: int) -> int:
    dag = order["dag"]
    return dag[order["rank"][bisect_left(dag, seq)]]


def _as_sent(data: dict[str, Any]) -> dict[str, Any]:
    """A capsule line's object without its null fields: the validated capsule when `_Index.exact`."""
    raw = data["capsule"]
    return {key: value for key, value in raw.items() if value is not None} if isinstance(raw, dict) else {}


def _is_capsule_line(number: int, text: str) -> bool:
    """Of a line pass 1 validated (one key: capsule, edge or alias); by its start when written as export writes it."""
    if text.startswith('{"capsule"'):
        return True
    if text.startswith(('{"edge"', '{"alias"')):
        return False
    return "capsule" in _record(number, text)


def _line_chunks(source: Source, index: _Index, step: Callable[[], None]) -> Iterator[list[tuple[int, str]]]:
    """The file's capsule lines again ((line number, text) each), `index.chunk_size` at a time, in
    file order; each chunk must be the text pass 1 validated (a 409 otherwise: the file changed).
    `step()` runs before each chunk is handed over."""
    chunk: list[tuple[int, str]] = []
    digest = hashlib.blake2b(digest_size=16)
    position = 0

    def checked() -> list[tuple[int, str]]:
        nonlocal digest, position
        if position >= len(index.chunk_digests) or digest.digest() != index.chunk_digests[position]:
            raise Conflict(f"the file changed while it was imported (lines {chunk[0][0]}-{chunk[-1][0]} differ "
                           "from the lines it checked first); import it again once it is no longer written to",
                           field=f"line[{chunk[0][0]}]")
        position += 1
        digest = hashlib.blake2b(digest_size=16)
        return chunk

    for number, text in source.numbered():
        if not _is_capsule_line(number, text):
            break  # capsule lines come first (validated)
        chunk.append((number, text))
        digest.update(text.encode("utf-8", "surrogatepass") + b"\n")
        if len(chunk) == index.chunk_size:
            step()
            yield checked()
            chunk = []
    if chunk:
        step()
        yield checked()
    if position != len(index.chunk_digests):
        raise Conflict("the file changed while it was imported (it has fewer capsule lines than it had); "
                       "import it again once it is no longer written to", field="line")


def _capsule_again(number: int, text: str, index: _Index) -> dict[str, Any]:
    """A capsule line pass 1 validated: decoded as it is when the index says that is the validated form."""
    data = _record(number, text)
    return _as_sent(data) if index.exact else _capsule_of(number, data)


def _capsule_chunks(source: Source, index: _Index, step: Callable[[], None]) -> Iterator[list[tuple[int, dict[str, Any]]]]:
    """The file's capsules again ((line number, capsule) each), a chunk at a time, in file order."""
    for chunk in _line_chunks(source, index, step):
        yield [(number, _capsule_again(number, text, index)) for number, text in chunk]


_END = object()


def _ahead(items: Iterator[Any], name: str) -> Iterator[Any]:
    """`items`, each one produced in a helper thread while the caller works on the one before.

    An import's pass 3 alternates Python work (decoding a chunk, folding its tokens) with a wait
    for Neo4j (the chunk's transaction); run one after the other, each waits for the other. At
    most one item is produced ahead, so memory holds two chunks. An error producing an item is
    raised to the caller when it asks for that item; when the caller stops early, the item being
    produced is finished (one chunk's work) and `items` is closed.
    """
    pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix=name)
    try:
        pending = pool.submit(next, items, _END)
        while True:
            item = pending.result()
            if item is _END:
                return
            pending = pool.submit(next, items, _END)
            yield item
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
        close = getattr(items, "close", None)
        if close is not None:
            close()


def _stored(tx: ManagedTransaction, ids: list[str], ords: list[int]) -> tuple[dict[str, Any], dict[int, str]]:
    stored = {r["props"]["id"]: _capsule_props(r["props"]) for r in run(tx, "transfer/stored_capsules", ids=ids)}
    held = {r["ord"]: r["id"] for r in run(tx, "transfer/held_ords", ords=ords)} if ords else {}
    return stored, held


def _check_store(db: Database, source: Source, index: _Index, order: dict[str, Any], watch: Watch) -> bytearray:
    """Pass 2: which capsules of the file are already stored identically (the returned flags, in
    file order); a capsule stored with other fields, or an ord the file's order needs held by
    another capsule, is a 409 before anything is written. The ids and kinds come from the index;
    a line is decoded again only when its id is stored (a re-run), to compare it."""
    present = bytearray(len(index.seqs))
    position = 0
    taken = bool(index.seqs) and db.read(lambda tx: run(tx, "transfer/range_stored", low=min(index.seqs),
                                                        high=max(index.seqs))[0]["taken"])
    for chunk in _line_chunks(source, index, watch.step):
        seqs = index.seqs[position:position + len(chunk)]
        ids = [f"cap-{seq}" for seq in seqs]
        dag = [index.is_dag(position + offset) for offset in range(len(chunk))]
        ords = [_ord(order, seq) for seq, is_dag in zip(seqs, dag) if is_dag]
        if not taken:  # nothing stored in the file's range (the usual import into a new store)
            position += len(chunk)
            continue
        watch.step()
        stored, held = db.read(lambda tx: _stored(tx, ids, ords))
        new_ords: set[int] = set()
        for offset, (number, text) in enumerate(chunk):
            there = stored.get(ids[offset])
            if there is None:
                if dag[offset]:
                    new_ords.add(_ord(order, seqs[offset]))
                continue
            capsule = _capsule_again(number, text, index)
            if there != capsule:
                fields = sorted(key for key in capsule.keys() | there.keys() if capsule.get(key) != there.get(key))
                raise Conflict(f"line {number}: {capsule['id']} is already stored with other fields "
                               f"({', '.join(fields)}); an import never overwrites: import into a store without "
                               "that id, or remove the line", field=f"line[{number}].capsule.id")
            present[position + offset] = 1
        clash = sorted(new_ords.intersection(held))
        if clash:
            raise Conflict(f"the BLOCKS order position {clash[0]} this file gives one of its tasks is held by "
                           f"{held[clash[0]]}, stored before: some of the file's capsules were stored by another import "
                           "or ingest, not by an earlier run of this one; import into an empty store",
                           field="line")
        position += len(chunk)
    return present


def _row(capsule: dict[str, Any], order: dict[str, Any], derived: _Derived, position: int) -> dict[str, Any]:
    """A node row: its kind label, its instants apart (as text, converted by the statement) and its
    other properties with the maintained fields as they are once the file's edges are stored
    (`derived`, at the capsule's `position` in file order)."""
    props = {key: value for key, value in capsule.items() if key not in TIME_PROPERTIES}
    props["tokens"] = maintain.folded_tokens(capsule["headline"], capsule["content"])
    superseded = bool(derived.superseded[position])
    tombstoned = capsule.get("tombstoned_at") is not None
    props["superseded"] = superseded
    ready = False
    if capsule["kind"] in DAG_KINDS:
        props["ord"] = _ord(order, capsule["seq"])
        props["open_blockers"] = derived.open_blockers[position]
        ready = (capsule["status"] == "open" and not tombstoned and not superseded
                 and props["open_blockers"] == 0)
        if ready:
            props["ready"] = True
    section = maintain.section_of(capsule["kind"], capsule["tier"], tombstoned, superseded, ready)
    if section is not None:
        props["counted"] = section
    props["census"] = maintain.census_of(capsule["kind"], tombstoned, superseded,
                                         blocked=capsule.get("status") == "open" and props.get("open_blockers", 0) > 0)
    row = {"label": maintain.kind_label(capsule["kind"]), "props": props}
    row.update((key, capsule.get(key)) for key in TIME_PROPERTIES)
    return row


def _add_blocks(tx: ManagedTransaction, rows: list[tuple[str, str]]) -> int:
    blocks_order.lock(tx)
    existed = sum(blocks_order.add_blocks(tx, rows).values())
    _mark_sources(tx, rows)
    return existed


def _add_supersedes(tx: ManagedTransaction, rows: list[tuple[str, str]]) -> int:
    edges = [{"from": a, "to": b} for a, b in rows]
    existed = sum(1 for r in run(tx, "capsules/relate_add_supersedes", edges=edges) if r["existed"])
    _mark_sources(tx, rows)
    return existed


def _mark_sources(tx: ManagedTransaction, rows: list[tuple[str, str]]) -> None:
    """Watchers (SPEC §13): the projects of the edges' sources and of what they now reach (the
    refresh of the targets marks again once their state is complete)."""
    changes.mark_capsules(tx, {a for a, _ in rows})


def _create(tx: ManagedTransaction, rows: list[dict[str, Any]]) -> None:
    run(tx, "transfer/import_capsules", rows=rows)
    maintain.count_created(tx, [row["props"] for row in rows])
    changes.mark(tx, [row["props"]["project_id"] for row in rows])


def _refresh(tx: ManagedTransaction, ids: list[str], superseded: list[str], readiness: list[str]) -> None:
    maintain.refresh(tx, superseded=superseded, readiness=readiness)
    # Watchers (SPEC §13): the maintained state of these capsules is complete only now.
    changes.mark_capsules(tx, ids)


def _write(db: Database, source: Source, index: _Index, order: dict[str, Any], present: bytearray,
           progress: Any, watch: Watch, seal: Callable[[dict[str, Any]], Wrap] | None) -> dict[str, Any]:
    """Pass 3: the alias sets (their count checked again under their locks, before any capsule is
    written), the capsules not yet stored (their maintained fields computed from the file, their
    counts added to the tallies), then the edges not yet stored, then a refresh of the capsules whose
    maintained state another writer may have made differ (module docstring). `seal(summary)` wraps
    the last transaction: the answer is complete by then."""
    derived = index.derived()
    summary: dict[str, Any] = {"capsules": 0, "edges": 0, "already_present": {"capsules": 0, "edges": 0}}
    if index.aliases:
        summary["aliases"] = len(index.aliases)
        last = not index.seqs
        watch.step()
        db.write(within(seal(summary) if last and seal is not None else None, lambda tx: _write_aliases(tx, index)))

    def stopped() -> None:
        # Not watch.step(): that marks a step, and the surfaces bound the time between two steps
        # of the thread that runs the transactions (graphsvc.surfaces.deadline).
        if watch.stopped:
            watch.step()

    def prepared() -> Iterator[tuple[int, list[dict[str, Any]]]]:
        position = 0
        for chunk in _capsule_chunks(source, index, stopped):
            yield len(chunk), [_row(capsule, order, derived, position + offset)
                               for offset, (_, capsule) in enumerate(chunk) if not present[position + offset]]
            position += len(chunk)

    with closing(_ahead(prepared(), "graphsvc-import-rows")) as chunks:
        for lines, rows in chunks:
            if rows:
                watch.step()
                db.write(lambda tx: _create(tx, rows))
            summary["capsules"] += len(rows)
            summary["already_present"]["capsules"] += lines - len(rows)
            if progress is not None:
                progress.update(lines)
    for edge_type, add in (("BLOCKS", _add_blocks), ("SUPERSEDES", _add_supersedes)):
        sources, targets = index.edges[edge_type]
        for start in range(0, len(sources), IMPORT_CHUNK * 2):
            rows = [(f"cap-{a}", f"cap-{b}") for a, b in zip(sources[start:start + IMPORT_CHUNK * 2],
                                                            targets[start:start + IMPORT_CHUNK * 2])]
            watch.step()
            existed = db.write(lambda tx: add(tx, rows))
            summary["edges"] += len(rows) - existed
            summary["already_present"]["edges"] += existed
            if progress is not None:
                progress.update(len(rows))
    refreshed = array("q", (position for position, target in enumerate(derived.targets)
                            if target or present[position]))
    if not refreshed and seal is not None and (index.seqs or not index.aliases):
        # Nothing left to carry the answer (the alias transaction carried it for a file without capsules).
        watch.step()
        db.write(within(seal(summary), lambda tx: None))
    for start in range(0, len(refreshed), IMPORT_CHUNK):
        positions = refreshed[start:start + IMPORT_CHUNK]
        ids = [f"cap-{index.seqs[position]}" for position in positions]
        superseded = [capsule_id for position, capsule_id in zip(positions, ids)
                      if present[position] or derived.targets[position] & _SUPERSEDES_TARGET]
        readiness = [capsule_id for position, capsule_id in zip(positions, ids) if index.is_dag(position)
                     and (present[position] or derived.targets[position] & _BLOCKS_TARGET)]
        last = start + IMPORT_CHUNK >= len(refreshed)
        watch.step()
        db.write(within(seal(summary) if last and seal is not None else None,
                        lambda tx: _refresh(tx, ids, superseded, readiness)))
    return summary


def _raise_counter(tx: ManagedTransaction, max_seq: int) -> None:
    run(tx, "transfer/raise_counter", max_seq=max_seq)


def import_lines(db: Database, lines: Source | Iterable[str | bytes], progress: Any = None,
                 seal: Callable[[dict[str, Any]], Wrap] | None = None, watch: Watch | None = None,
                 prepare: Callable[[], None] | None = None) -> dict[str, Any]:
    """Validate every line, check the store, then write what is not stored yet (module docstring).

    `progress` is anything with `update(n)` (e.g. tqdm), advanced once per line written or found
    stored; a `total` of None is set to the file's line count once the file is validated (tqdm). Blank lines
    are ignored. `seal(summary)` gives the wrap for the last write transaction (an idempotency key
    is stored with the answer the import is about to give). `watch.step()` runs before each
    transaction (graphsvc.watch), so a surface can stop the import between two of them. `prepare()`
    runs once the file is valid, before the first transaction (the service's schema check).
    """
    source = lines if isinstance(lines, Source) else Source.of_lines(lines)
    watch = watch if watch is not None else Watch()
    index = _validate(source, watch)
    if prepare is not None:
        prepare()
    watch.step()
    # The store must say it is at the current schema before the first capsule is written: a store
    # without that mark (one emptied by wipe_all) would be migrated by the
    # next process that starts (`GraphService.ensure_schema`), and migrating a partly imported store
    # orders its BLOCKS again over the capsules written so far, so a re-run of this import would
    # find the ords its remaining tasks need taken (409). Returns at once on a marked store.
    migrate.migrate(db)
    _check_stored_aliases(db, index)
    if progress is not None and getattr(progress, "total", 0) is None:
        progress.total = index.lines_total
        getattr(progress, "refresh", lambda: None)()
    order = index.ords()
    summary: dict[str, Any] = {"capsules": 0, "edges": 0, "already_present": {"capsules": 0, "edges": 0}}
    max_seq = max(index.seqs, default=0)
    watch.step()
    if not index.seqs and not index.aliases:  # nothing to write: the counter's transaction carries the seal
        db.write(within(seal(summary) if seal is not None else None, lambda tx: _raise_counter(tx, max_seq)))
        return summary
    db.write(lambda tx: _raise_counter(tx, max_seq))
    present = _check_store(db, source, index, order, watch)
    return _write(db, source, index, order, present, progress, watch, seal)


def remove_imported(db: Database, ids: list[str]) -> None:
    """Remove capsules an import stored (an operator backing out a file imported by mistake), one
    transaction per IMPORT_CHUNK ids, keeping the maintained state of every other capsule true.

    Not every id of a file blindly: capsules of the same ids stored by something else must be
    left alone, so the caller names exactly the ids to remove.
    """
    for start in range(0, len(ids), IMPORT_CHUNK):
        chunk = ids[start:start + IMPORT_CHUNK]
        db.write(lambda tx: maintain.remove(tx, chunk, lambda: run(tx, "transfer/remove_imported", ids=chunk)))
