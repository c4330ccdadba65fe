"""The schema-v1 read path kept as an oracle for schema v2 (tests only).

Schema v2 moved readiness, supersession, folded tokens and the BLOCKS order to the write side
(graphsvc.store.maintain). These helpers say what the answers SHOULD be, computed from the raw
graph alone, so a test can compare the maintained state and the pack built from it:

* `oracle_pack` builds a pack through `cypher/bootstrap/sections_recomputed.cypher`, which reads
  none of the maintained fields;
* `maintained_state` / `recomputed_state` show the stored fields beside their from-scratch values
  (readable diffs in failure messages);
* `assert_maintained` asserts graphsvc.store.migrate.verify(db).clean (fields and the order's
  invariant), and prints the Drift plus the differing capsules when it is not.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Iterator, Mapping

from graphsvc.core.pack import SECTION_CAP, assemble_pack
from graphsvc.core.textmatch import term_token_sets
from graphsvc.models import BootstrapRequest
from graphsvc.store.bootstrap import inputs_from_row, pack_request
from graphsvc.store.db import Database, run
from graphsvc.store.maintain import folded_tokens, kind_label
from graphsvc.store.migrate import Drift, verify

#: What the v1 read sent per ranked section: the next action + SECTION_CAP, and SECTION_CAP.
TOP_READY = 1 + SECTION_CAP
TOP_SECTION = SECTION_CAP
PAGE = 500


def oracle_pack(db: Database, request_dict: Mapping[str, Any], now: datetime) -> dict[str, Any]:
    """The pack for `request_dict` at `now`, built from the v1 statement that recomputes everything."""
    request = BootstrapRequest(**request_dict)
    tokens = sorted(frozenset().union(*term_token_sets(list(request.terms or ()))))
    row = db.read(lambda tx: run(
        tx, "bootstrap/sections_recomputed", now=now, tokens=tokens, top_ready=TOP_READY,
        top_section=TOP_SECTION, project_id=request.project_id, project_prefix=request.project_prefix,
        agent=request.agent,
    ))[0]
    # live_cycle only needs a nonzero count to search; back_edges is the v1 statement's count.
    inputs = inputs_from_row(row, row["back_edges"])
    return assemble_pack(inputs, pack_request(request), now)


def _expected_pages(db: Database) -> Iterator[Any]:
    """Every capsule's row of maintain/expected (stored values beside recomputed ones), by seq."""
    after = 0
    while True:
        page = db.query("maintain/expected", after=after, limit=PAGE)
        yield from page
        if len(page) < PAGE:
            return
        after = page[-1]["seq"]


def maintained_state(db: Database) -> dict[str, dict[str, Any]]:
    """Per capsule id, the maintained fields as stored (kind labels, tokens, superseded, open_blockers, ready, counted)."""
    return {
        r["id"]: {
            "labels": sorted(set(r["labels"]) - {"Capsule"}),
            "tokens": r["tokens"],
            "superseded": r["stored_superseded"],
            "open_blockers": r["stored_open_blockers"],
            "ready": r["stored_ready"],
            "counted": r["stored_counted"],
        }
        for r in _expected_pages(db)
    }


def recomputed_state(db: Database) -> dict[str, dict[str, Any]]:
    """Per capsule id, the same fields computed from scratch from the raw graph (tokens in Python)."""
    return {
        r["id"]: {
            "labels": [kind_label(r["kind"])],
            "tokens": folded_tokens(r["headline"], r["content"]),
            "superseded": r["superseded"],
            "open_blockers": r["open_blockers"],
            "ready": r["ready"],
            "counted": r["counted"],
        }
        for r in _expected_pages(db)
    }


def describe_drift(db: Database, drift: Drift) -> str:
    """The Drift plus, for each drifted capsule, its stored vs recomputed fields."""
    stored, expected = maintained_state(db), recomputed_state(db)
    ids = sorted({capsule_id for ids in drift.fields.values() for capsule_id in ids},
                 key=lambda capsule_id: int(capsule_id.split("-")[1]))
    lines = [f"maintained state drifted: fields={drift.fields} order={drift.order} tallies={drift.tallies} "
             f"indexes={drift.indexes}"]
    for capsule_id in ids[:20]:
        lines.append(f"  {capsule_id}: stored={stored.get(capsule_id)} recomputed={expected.get(capsule_id)}")
    return "\n".join(lines)


def assert_maintained(db: Database, context: str = "") -> None:
    """Every maintained field equals its from-scratch value and the BLOCKS order holds (migrate.verify)."""
    drift = verify(db)
    assert drift.clean, (f"{context}: " if context else "") + describe_drift(db, drift)


def pack_diff(new: Mapping[str, Any], old: Mapping[str, Any]) -> str:
    """The top-level pack keys that differ, with both values (for assertion messages)."""
    keys = sorted(set(new) | set(old))
    return "\n".join(f"  {key}:\n    new   ={new.get(key)!r}\n    oracle={old.get(key)!r}"
                     for key in keys if new.get(key) != old.get(key))
