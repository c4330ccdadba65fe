"""export/import against a real Neo4j: exact JSON Lines round trip, all-or-nothing import, counter raised."""

from __future__ import annotations

import json
from datetime import datetime, timezone

import pytest

from graphsvc.clock import fixed_clock
from graphsvc.errors import Conflict, InvalidInput
from graphsvc.service import GraphService
from graphsvc.store import transfer
from tests.conftest import wipe

NOW = datetime(2026, 12, 1, 12, 0, tzinfo=timezone.utc)


@pytest.fixture
def svc(db):
    return GraphService(db, clock=fixed_clock(NOW))


def populate(svc: GraphService, db) -> None:
    svc.ingest({"items": [
        {"project_id": "nott", "kind": "task", "content": "Ship it ✓\n— with “quotes” and \\ backslashes"},
        {"project_id": "nott/x", "kind": "epic", "content": "Epic", "headline": "Chosen"},
        {"project_id": "nott", "kind": "decision", "content": "Use UTC", "valid_to": "2027-03-04T05:06:07.123456+02:00"},
        {"project_id": "other", "kind": "constraint", "content": "Never force-push", "tier": "stale"},
    ]})
    svc.ingest({"items": [
        {"project_id": "nott", "kind": "task", "content": "after", "blocked_by": ["cap-1", "cap-2"]},
        {"project_id": "nott", "kind": "decision", "content": "Use UTC, really", "supersedes": ["cap-3"]},
    ]})
    svc.relate({"add": [{"type": "BLOCKS", "from": "cap-2", "to": "cap-1"}]})
    svc.update("cap-2", {"status": "done"})
    svc.tombstone(["cap-4"])
    # an instant with nanoseconds, as another writer (or Neo4j Browser) could store it
    db._driver.execute_query("MATCH (c:Capsule {id: 'cap-6'}) SET c.valid_to = datetime('2030-01-01T00:00:00.123456789Z')")


def counter(db) -> int:
    return db._driver.execute_query("MATCH (k:IdCounter) RETURN k.value").records[0][0]


def count_nodes(db) -> int:
    """Capsules stored (the service's own bookkeeping nodes, e.g. its schema version, are not data)."""
    return db._driver.execute_query("MATCH (n:Capsule) RETURN count(n)").records[0][0]


def test_export_format_and_order(svc, db):
    populate(svc, db)
    lines = list(svc.export_lines())
    records = [json.loads(line) for line in lines]
    assert all(line.endswith("\n") and line.count("\n") == 1 for line in lines)
    assert [r["capsule"]["id"] for r in records[:6]] == [f"cap-{n}" for n in range(1, 7)]
    assert [r["edge"] for r in records[6:]] == [
        {"type": "BLOCKS", "from": "cap-1", "to": "cap-5"},
        {"type": "BLOCKS", "from": "cap-2", "to": "cap-1"},
        {"type": "BLOCKS", "from": "cap-2", "to": "cap-5"},
        {"type": "SUPERSEDES", "from": "cap-6", "to": "cap-3"},
    ]
    third = records[2]["capsule"]
    assert third["valid_to"] == "2027-03-04T03:06:07.123456000Z"
    assert records[5]["capsule"]["valid_to"] == "2030-01-01T00:00:00.123456789Z"
    assert records[3]["capsule"]["tombstoned_at"] == "2026-12-01T12:00:00.000000000Z"
    assert records[0]["capsule"]["seq"] == 1 and "status" not in third


def test_round_trip_is_byte_identical_and_the_counter_continues(svc, db, monkeypatch):
    monkeypatch.setattr(transfer, "EXPORT_PAGE", 2)  # exercise the keyset paging too
    monkeypatch.setattr(transfer, "IMPORT_CHUNK", 2)
    populate(svc, db)
    svc.ingest({"project_id": "nott", "kind": "fact", "content": "burns cap-7"})
    svc.tombstone(["cap-7"])
    first = "".join(svc.export_lines())
    wipe(db)

    class Progress:
        total = 0

        def update(self, n: int) -> None:
            self.total += n

    progress = Progress()
    assert svc.import_lines(first.splitlines(keepends=True), progress=progress) == {"capsules": 7, "edges": 4, "already_present": {"capsules": 0, "edges": 0}}
    assert progress.total == 11
    assert "".join(svc.export_lines()) == first
    assert counter(db) == 7
    assert svc.ingest({"project_id": "nott", "kind": "fact", "content": "new"}) == {"ids": ["cap-8"]}


def test_import_never_lowers_the_counter(svc, db):
    svc.ingest({"project_id": "nott", "kind": "fact", "content": "only"})
    text = "".join(svc.export_lines())
    wipe(db)
    svc.ingest({"items": [{"project_id": "nott", "kind": "fact", "content": f"{n}"} for n in range(3)]})
    svc.tombstone(["cap-1"])
    # free the id cap-1 (a stored capsule renumbered by hand) so only the counter rule is under test
    db._driver.execute_query("MATCH (c:Capsule {id: 'cap-1'}) SET c.id = 'cap-100', c.seq = 100")
    svc.import_lines(text.splitlines())
    assert counter(db) == 3


def test_importing_what_is_stored_finds_it_already_present(svc, db):
    populate(svc, db)
    text = "".join(svc.export_lines())
    before = count_nodes(db)
    result = svc.import_lines(text.splitlines())
    assert result == {"capsules": 0, "edges": 0, "already_present": {"capsules": 6, "edges": 4}}
    assert count_nodes(db) == before and "".join(svc.export_lines()) == text


def test_an_id_stored_with_other_fields_is_409_naming_it_and_nothing_is_written(svc, db):
    populate(svc, db)
    lines = "".join(svc.export_lines()).splitlines()
    changed = json.loads(lines[2])
    changed["capsule"]["content"] = "Use UTC, edited"
    lines[2] = json.dumps(changed)
    extra = capsule_line(50)  # a new capsule the file would add: it must not be written either
    lines.insert(6, extra)
    before = "".join(svc.export_lines())
    with pytest.raises(Conflict) as caught:
        svc.import_lines(lines)
    assert caught.value.status == 409 and "cap-3 is already stored with other fields (content)" in caught.value.message
    assert caught.value.field == "line[3].capsule.id"
    assert "".join(svc.export_lines()) == before


def capsule_line(n: int, **overrides) -> str:
    capsule = {"id": f"cap-{n}", "seq": n, "project_id": "nott", "kind": "task", "tier": "active",
               "headline": "h", "content": "c", "status": "open",
               "created_at": "2026-12-01T12:00:00.000000000Z", "updated_at": "2026-12-01T12:00:00.000000000Z"}
    capsule.update(overrides)
    return json.dumps({"capsule": {k: v for k, v in capsule.items() if v is not None}})


def edge_line(a: int, b: int, kind: str = "BLOCKS") -> str:
    return json.dumps({"edge": {"type": kind, "from": f"cap-{a}", "to": f"cap-{b}"}})


@pytest.mark.parametrize(
    ("bad", "field", "rule"),
    [
        ("{not json", "line[3]", "not valid JSON"),
        ('{"node": {}}', "line[3]", '{"capsule": {...}}'),
        (capsule_line(3, kind="note"), "line[3].capsule.kind", "Input should be"),
        (capsule_line(3, seq=4), "line[3].capsule", "does not match id"),
        (capsule_line(3, status=None), "line[3].capsule", "status is required"),
        (capsule_line(3, created_at="2026-12-01T12:00:00Z"), "line[3].capsule.created_at", "UTC instant"),
        (capsule_line(3, created_at="2026-13-01T12:00:00.000000000Z"), "line[3].capsule.created_at", "calendar"),
        (capsule_line(3, colour="red"), "line[3].capsule.colour", "accepted:"),
        (capsule_line(1), "line[3].capsule.id", "already appeared on line 1"),
        (edge_line(1, 9), "line[3].edge.to", "not a capsule of this file"),
        (edge_line(1, 1), "line[3].edge", "cannot BLOCKS itself"),
        (edge_line(1, 2, "LIKES"), "line[3].edge.type", "BLOCKS"),
    ],
)
def test_bad_lines_are_422_naming_the_line_and_nothing_is_written(svc, db, bad, field, rule):
    lines = [capsule_line(1), capsule_line(2), bad, edge_line(1, 2)]
    with pytest.raises(InvalidInput) as caught:
        svc.import_lines(lines)
    assert caught.value.status == 422 and caught.value.field == field
    assert rule in caught.value.message and "line 3" in caught.value.message
    assert count_nodes(db) == 0


def test_capsules_must_precede_edges_and_blocks_join_tasks(svc, db):
    with pytest.raises(InvalidInput) as caught:
        svc.import_lines([capsule_line(1), capsule_line(2), edge_line(1, 2), capsule_line(3)])
    assert caught.value.field == "line[4].capsule" and "before the first edge" in caught.value.message
    with pytest.raises(InvalidInput) as caught:
        svc.import_lines([capsule_line(1), capsule_line(2, kind="fact", status=None), edge_line(1, 2)])
    assert caught.value.field == "line[3].edge.to" and "task/epic" in caught.value.message
    assert count_nodes(db) == 0


def test_a_file_is_read_line_by_line_and_an_over_long_line_is_422_naming_it(svc, db, monkeypatch):
    import io

    lines = [capsule_line(1), capsule_line(2), edge_line(1, 2)]
    body = ("\r\n".join(lines) + "\n").encode("utf-8")
    assert svc.import_file(io.BytesIO(body))["capsules"] == 2
    wipe(db)
    monkeypatch.setattr(transfer, "MAX_LINE_BYTES", len(lines[0].encode()) + 1)  # the first line fits, with its \r
    long = capsule_line(2, content="c" * 400)
    with pytest.raises(InvalidInput) as caught:
        svc.import_file(io.BytesIO((lines[0] + "\r\n" + long + "\n").encode("utf-8")))
    assert caught.value.field == "line[2]" and "longer than" in caught.value.message
    assert count_nodes(db) == 0


def test_blank_lines_are_ignored(svc, db):
    assert svc.import_lines([capsule_line(1), "\n", "", capsule_line(2) + "\n"]) == {"capsules": 2, "edges": 0, "already_present": {"capsules": 0, "edges": 0}}


def test_an_interrupted_import_keeps_what_it_committed_and_a_rerun_completes_it(svc, db, monkeypatch):
    """A failure after some chunks committed (here: the progress callback raising, as Ctrl-C would)."""
    from graphsvc.store.migrate import verify

    monkeypatch.setattr(transfer, "IMPORT_CHUNK", 2)
    lines = [capsule_line(n) for n in range(1, 6)] + [edge_line(2, 1), edge_line(1, 3)]

    class Interrupt(Exception):
        pass

    class FailingProgress:
        calls = 0

        def update(self, n: int) -> None:
            self.calls += 1
            if self.calls == 2:
                raise Interrupt

    with pytest.raises(Interrupt):
        svc.import_lines(lines, progress=FailingProgress())
    assert count_nodes(db) == 4  # two chunks of two committed, and stay
    assert counter(db) == 5
    assert svc.import_lines(lines) == {"capsules": 1, "edges": 2, "already_present": {"capsules": 4, "edges": 0}}
    assert verify(db).clean
    wipe(db)
    svc.import_lines(lines)
    whole = "".join(svc.export_lines())
    assert svc.ingest({"project_id": "nott", "kind": "fact", "content": "next"}) == {"ids": ["cap-6"]}
    wipe(db)
    with pytest.raises(Interrupt):
        svc.import_lines(lines, progress=FailingProgress())
    svc.import_lines(lines)
    assert "".join(svc.export_lines()) == whole


def test_an_export_taken_while_agents_write_imports_and_verifies(svc, db, monkeypatch):
    """A backup taken on a live service restores. Writes land between every two pages of the export
    (each page is its own transaction): new tasks blocked_by the previous one, an update, a relate.
    The file must import into an empty store, and the result must pass `verify`."""
    from graphsvc.store.migrate import verify

    populate(svc, db)
    svc.ingest({"items": [{"project_id": "live", "kind": "task", "content": f"seed {n}"} for n in range(12)]})
    monkeypatch.setattr(transfer, "EXPORT_PAGE", 3)
    writer = GraphService(db, clock=fixed_clock(NOW))
    original = db.query
    made: list[str] = ["cap-18"]

    def query_then_write(name, **params):
        page = original(name, **params)
        if name.startswith("transfer/export_"):  # an agent writes between two pages
            [new] = writer.ingest({"project_id": "live", "kind": "task", "content": f"next after {made[-1]}",
                                   "blocked_by": [made[-1]]})["ids"]
            writer.relate({"add": [{"type": "SUPERSEDES", "from": new, "to": made[-1]}]})
            writer.update(made[-1], {"status": "done"})
            made.append(new)
        return page

    monkeypatch.setattr(db, "query", query_then_write)
    lines = list(svc.export_lines())
    monkeypatch.setattr(db, "query", original)
    assert len(made) > 10  # the writes really interleaved with the pages

    capsule_ids = {json.loads(line)["capsule"]["id"] for line in lines if '"capsule"' in line[:12]}
    ends = {json.loads(line)["edge"][end] for line in lines if line.startswith('{"edge"') for end in ("from", "to")}
    assert ends <= capsule_ids, sorted(ends - capsule_ids)

    wipe(db)
    restored = GraphService(db, clock=fixed_clock(NOW))
    result = restored.import_lines(lines)
    assert result["capsules"] == len(capsule_ids)
    assert verify(db).clean


def _changing_source(first: list[str], later: list[str], changes_at_pass: int) -> transfer.Source:
    """Lines that read as `first` for the passes before `changes_at_pass` (1-based) and as `later`
    from it on: a file on disk written to while it is imported."""
    reads = {"n": 0}

    def reopen():
        reads["n"] += 1
        return iter(first if reads["n"] < changes_at_pass else later)

    return transfer.Source(reopen, "")


def _file(count: int, headline: str = "line {n}") -> list[str]:
    instant = "2026-12-01T12:00:00.000000000Z"
    return [transfer._line({"capsule": {"id": f"cap-{n}", "seq": n, "project_id": "nott", "kind": "fact",
                                        "tier": "active", "headline": headline.format(n=n), "content": f"fact {n}",
                                        "created_at": instant, "updated_at": instant}})
            for n in range(1, count + 1)]


@pytest.mark.parametrize("changes_at_pass", [2, 3])
def test_a_file_that_changes_between_the_passes_is_409_and_no_unchecked_line_is_written(svc, db, monkeypatch,
                                                                                      changes_at_pass):
    """Passes 2 and 3 read lines pass 1 validated: a chunk whose text changed is refused before it
    is written (here the third chunk of three gets a headline pass 1 never saw)."""
    monkeypatch.setattr(transfer, "IMPORT_CHUNK", 2)
    first = _file(6)
    later = first[:4] + _file(6, headline="changed {n}")[4:]
    with pytest.raises(Conflict, match="the file changed while it was imported") as caught:
        svc.import_lines(_changing_source(first, later, changes_at_pass))
    assert caught.value.field == "line[5]"
    stored = {r["id"]: r["headline"] for r in db._driver.execute_query(
        "MATCH (c:Capsule) RETURN c.id AS id, c.headline AS headline").records}
    # pass 2 stops before any write; pass 3 has written the two chunks before the changed one
    assert stored == ({} if changes_at_pass == 2 else {f"cap-{n}": f"line {n}" for n in range(1, 5)})
    svc.import_lines(first)  # the unchanged file completes the import
    assert count_nodes(db) == 6


def test_a_file_that_loses_capsule_lines_between_the_passes_is_409(svc, db, monkeypatch):
    monkeypatch.setattr(transfer, "IMPORT_CHUNK", 2)
    first = _file(4)
    with pytest.raises(Conflict, match="fewer capsule lines"):
        svc.import_lines(_changing_source(first, first[:2], 2))
    assert count_nodes(db) == 0


def test_null_fields_and_the_validated_form_are_what_the_later_passes_write(svc, db, monkeypatch):
    """Passes 2 and 3 take a line as decoded only when pass 1 found that to be its validated form
    (null fields dropped); were validation to normalise a value, they validate the line again."""
    lines = [line.replace('"content"', '"valid_to":null,"status":null,"content"') for line in _file(2)]
    assert svc.import_lines(lines)["capsules"] == 2
    exported = "".join(svc.export_lines())
    assert '"valid_to"' not in exported and '"status"' not in exported
    wipe(db)

    validate = transfer._capsule_of

    def normalising(number, data):
        capsule = validate(number, data)
        return {**capsule, "headline": capsule["headline"].upper()}

    monkeypatch.setattr(transfer, "_capsule_of", normalising)
    assert svc.import_lines(_file(2))["capsules"] == 2
    headlines = sorted(r[0] for r in db._driver.execute_query("MATCH (c:Capsule) RETURN c.headline").records)
    assert headlines == ["LINE 1", "LINE 2"]
