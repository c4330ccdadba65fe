"""An import's alias lines meet memory_alias's rules (SPEC §10) in the validation pass, before anything
is written: a file whose only bad line is its last alias line writes no capsule, no edge, no alias and
does not move the id counter, and the 422 names that line."""

from __future__ import annotations

import json
import threading
import time
from datetime import datetime, timezone

import pytest

from graphsvc.clock import fixed_clock
from graphsvc.errors import InvalidInput
from graphsvc.service import GraphService
from graphsvc.store import transfer

NOW = datetime(2026, 12, 1, 12, 0, tzinfo=timezone.utc)


@pytest.fixture
def svc(db) -> GraphService:
    return GraphService(db, clock=fixed_clock(NOW))


def exported_file(svc: GraphService) -> list[str]:
    """A real export of two tasks (one blocks the other) and one alias set; the store is then emptied."""
    first = svc.ingest({"project_id": "p", "kind": "task", "content": "pg tuning"})["ids"][0]
    svc.ingest({"project_id": "p", "kind": "task", "content": "pg backup", "blocked_by": [first]})
    svc.alias({"term": "postgres", "aliases": ["pg"]})
    lines = list(svc.export_lines())
    svc.db.wipe_all()
    return lines


def alias_line(term: str, aliases: list[str], **scope: str) -> str:
    return json.dumps({"alias": {"term": term, "aliases": aliases, **scope}})


def nothing_written(svc: GraphService, db) -> None:
    counts = db._driver.execute_query(
        "OPTIONAL MATCH (c:Capsule) WITH count(c) AS capsules "
        "OPTIONAL MATCH ()-[r:BLOCKS|SUPERSEDES]->() WITH capsules, count(r) AS edges "
        "OPTIONAL MATCH (k:IdCounter {name: 'capsule'}) RETURN capsules, edges, k.value AS counter").records[0]
    assert (counts["capsules"], counts["edges"], counts["counter"]) == (0, 0, None), dict(counts)


def refused(svc: GraphService, lines: list[str]) -> InvalidInput:
    with pytest.raises(InvalidInput) as caught:
        svc.import_lines(lines)
    return caught.value


def test_an_alias_folding_to_its_own_term_refuses_the_whole_file(svc, db):
    lines = exported_file(svc)
    bad = lines + [alias_line("Cache", ["redis", "  CACHE "])]
    error = refused(svc, bad)
    assert error.field == f"line[{len(bad)}].alias.aliases[1]" and "the term itself" in error.message
    nothing_written(svc, db)
    assert svc.aliases({})["aliases"] == []


def test_a_files_alias_lines_merging_past_32_refuse_the_whole_file(svc, db):
    lines = exported_file(svc)
    # "Cache" and "cache" are one term: 20 + 13 distinct aliases make 33 once the lines are merged.
    bad = lines + [alias_line("Cache", [f"c{n}" for n in range(20)]),
                   alias_line("cache", [f"c{n}" for n in range(10, 33)])]
    error = refused(svc, bad)
    assert error.field == f"line[{len(bad)}].alias.aliases" and "33 aliases" in error.message
    nothing_written(svc, db)
    # the same aliases in another scope are another set: the file imports
    fine = lines + [alias_line("Cache", [f"c{n}" for n in range(20)]),
                    alias_line("cache", [f"c{n}" for n in range(10, 33)], project_prefix="p")]
    assert svc.import_lines(fine)["aliases"] == 3


def test_a_set_passing_32_once_merged_with_the_stored_one_refuses_the_whole_file(svc, db):
    lines = exported_file(svc)
    svc.alias({"term": "cache", "aliases": [f"c{n}" for n in range(30)]})
    bad = lines + [alias_line("CACHE", ["c1", "x1", "x2", "x3"])]
    error = refused(svc, bad)
    assert error.field == f"line[{len(bad)}].alias.aliases" and "33 aliases" in error.message
    nothing_written(svc, db)
    assert svc.aliases({})["aliases"] == [{"term": "cache", "aliases": sorted(f"c{n}" for n in range(30))}]
    # two fewer and it fits: the file imports, its set merged into the stored one
    assert svc.import_lines(lines + [alias_line("CACHE", ["c1", "x1"])])["capsules"] == 2
    assert len(svc.aliases({})["aliases"][0]["aliases"]) == 31


def capsules_and_edges(db) -> tuple[int, int]:
    counts = db._driver.execute_query(
        "OPTIONAL MATCH (c:Capsule) WITH count(c) AS capsules "
        "OPTIONAL MATCH ()-[r:BLOCKS|SUPERSEDES]->() RETURN capsules, count(r) AS edges").records[0]
    return counts["capsules"], counts["edges"]


def test_a_set_grown_by_memory_alias_after_the_imports_check_refuses_the_file_before_any_capsule(svc, db, monkeypatch):
    """memory_alias commits between the import's read of the stored sets and its writes: the set it
    grew is checked again under the node's lock, the 422 names the line, no capsule or edge is written
    and the set stays as memory_alias left it (never past 32)."""
    lines = exported_file(svc)
    svc.alias({"term": "cache", "aliases": [f"c{n}" for n in range(28)]})
    file = lines + [alias_line("CACHE", ["x1", "x2", "x3"])]  # 31 over the stored set: passes the read check
    checked = transfer._check_stored_aliases

    def check_then_teach(db_, index) -> None:
        checked(db_, index)
        svc.alias({"term": "cache", "aliases": ["y1", "y2"]})  # its own transaction, committed: 30 stored

    monkeypatch.setattr(transfer, "_check_stored_aliases", check_then_teach)
    error = refused(svc, file)
    assert error.field == f"line[{len(file)}].alias.aliases" and "33 aliases" in error.message
    assert capsules_and_edges(db) == (0, 0)
    assert svc.aliases({})["aliases"] == [{"term": "cache",
                                           "aliases": sorted([f"c{n}" for n in range(28)] + ["y1", "y2"])}]
    # once memory_alias forgets what it added, the same file imports whole
    monkeypatch.setattr(transfer, "_check_stored_aliases", checked)
    svc.alias({"term": "cache", "aliases": ["y1", "y2"], "forget": True})
    answer = svc.import_lines(file)
    assert (answer["capsules"], answer["edges"], answer["aliases"]) == (2, 1, 2)
    assert len(svc.aliases({})["aliases"][0]["aliases"]) == 31


def test_memory_alias_after_an_imports_alias_write_meets_the_merged_set(svc, db, monkeypatch):
    """The other order: memory_alias runs once the import committed its sets (before its capsules), so its
    own check counts the imported aliases and refuses; the import completes."""
    lines = exported_file(svc)
    svc.alias({"term": "cache", "aliases": [f"c{n}" for n in range(28)]})
    file = lines + [alias_line("cache", ["x1", "x2", "x3"])]
    ahead = transfer._ahead
    refusals: list[InvalidInput] = []

    def teach_then_ahead(items, name):  # the capsule pass starts: the alias transaction has committed
        assert capsules_and_edges(db) == (0, 0)
        with pytest.raises(InvalidInput) as caught:
            svc.alias({"term": "cache", "aliases": ["y1", "y2"]})
        refusals.append(caught.value)
        return ahead(items, name)

    monkeypatch.setattr(transfer, "_ahead", teach_then_ahead)
    answer = svc.import_lines(file)
    assert (answer["capsules"], answer["edges"], answer["aliases"]) == (2, 1, 2)
    assert len(refusals) == 1 and "33 aliases" in refusals[0].message
    assert svc.aliases({})["aliases"][0] == {"term": "cache",
                                             "aliases": sorted([f"c{n}" for n in range(28)] + ["x1", "x2", "x3"])}


def test_imports_racing_memory_alias_leave_one_of_them_and_never_33_aliases(svc, db):
    """Round after round, an import adding 3 aliases and a memory_alias adding 2 other ones run at once over
    a stored set of 28: each fits alone, not both. Exactly one is refused, and the store is what the other
    alone would leave: the import's 2 capsules and 31 aliases, or no capsule and 30 aliases."""
    lines = exported_file(svc)
    file = lines + [alias_line("cache", ["x1", "x2", "x3"])]
    stored = [f"c{n}" for n in range(28)]
    for round_ in range(16):
        db.wipe_all()
        svc.alias({"term": "cache", "aliases": stored})
        start = threading.Barrier(2)
        refusals: dict[str, InvalidInput] = {}

        def attempt(name: str, call) -> None:
            start.wait()
            if name == "alias":  # later each round, so it lands before, inside and after the import's passes
                time.sleep(round_ * 0.015)
            try:
                call()
            except InvalidInput as refusal:
                refusals[name] = refusal

        pool = [threading.Thread(target=attempt, args=("import", lambda: svc.import_lines(file))),
                threading.Thread(target=attempt, args=("alias", lambda: svc.alias({"term": "cache",
                                                                                     "aliases": ["y1", "y2"]})))]
        for thread in pool:
            thread.start()
        for thread in pool:
            thread.join(timeout=120)
        assert not any(thread.is_alive() for thread in pool)
        assert len(refusals) == 1, f"round {round_}: {refusals}"
        (refused_one, refusal), = refusals.items()
        assert "33 aliases" in refusal.message, refusal.message
        aliases_now = svc.aliases({})["aliases"][0]["aliases"]
        if refused_one == "import":
            assert refusal.field == f"line[{len(file)}].alias.aliases"
            assert capsules_and_edges(db) == (0, 0) and aliases_now == sorted(stored + ["y1", "y2"])
        else:
            assert capsules_and_edges(db) == (2, 1) and aliases_now == sorted(stored + ["x1", "x2", "x3"])
