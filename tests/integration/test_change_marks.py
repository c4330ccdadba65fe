"""Change markers (SPEC §13, graphsvc.store.changes) on a real Neo4j: every kind of write marks at least
every project whose pack it changed, so no watcher sleeps through a change.

The oracle is the packs themselves: before and after each write, the bootstrap and digest of every
project are computed; each project whose pack differs must have had its marker moved by that write.
Cross-project BLOCKS and SUPERSEDES edges make the writes reach projects they do not name.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any, Callable

from graphsvc.core.etag import etag_of
from graphsvc.models import SessionStart
from graphsvc.store import changes, sessions
from graphsvc.store.maintain import delete_project_tree
from graphsvc.store.transfer import export_lines, import_lines, remove_imported

from .bootstrap_support import NOW, Store

PROJECTS = ("shop", "shop/api", "billing", "ops")
LOOKBACK_MS = 10 * 60 * 1000


def markers(db) -> dict[str, int]:
    assert db.settle(), "the markers of the writes so far were not bumped within the bound"
    return {project: seq for project, seq, _ in changes.changed_since(db, None, LOOKBACK_MS)[1]}


def tags(s: Store) -> dict[str, tuple[str, str]]:
    service = s.at(NOW)
    return {project: (etag_of(service.bootstrap({"project_id": project})),
                      etag_of(service.digest({"project_id": project}))) for project in PROJECTS}


def check(s: Store, write: Callable[[], Any], must_mark: set[str] = frozenset()) -> set[str]:
    """Run `write`; every project whose pack changed is marked (and so is `must_mark`). The marked set."""
    before_tags, before = tags(s), markers(s.db)
    write()
    after_tags, after = tags(s), markers(s.db)
    moved = {project for project, seq in after.items() if before.get(project) != seq}
    changed = {project for project in PROJECTS if before_tags[project] != after_tags[project]}
    assert changed <= moved, f"packs of {sorted(changed - moved)} changed without a mark"
    assert must_mark <= moved
    return moved


def test_every_write_marks_every_project_whose_pack_it_changes(db):
    s = Store(db)
    blocker = check(s, lambda: s.put("task", "Blocker in billing", project_id="billing"))
    assert blocker == {"billing"}
    ids: dict[str, str] = {"blocker": s.put("task", "Blocker again", project_id="billing")}
    check(s, lambda: ids.update(api=s.put("task", "API task", project_id="shop/api", blocked_by=[ids["blocker"]])),
          {"shop/api"})
    check(s, lambda: ids.update(old=s.put("decision", "Old decision", project_id="ops")), {"ops"})
    # A supersede across projects changes the superseded one's project.
    check(s, lambda: ids.update(new=s.put("decision", "New decision", project_id="shop", supersedes=[ids["old"]])),
          {"shop", "ops"})
    # Done in billing: the blocked task in shop/api becomes ready.
    check(s, lambda: s.done(ids["blocker"]), {"billing", "shop/api"})
    check(s, lambda: s.at(NOW).update(ids["blocker"], {"status": "open"}), {"billing", "shop/api"})
    # Tombstoning the superseder gives ops its decision back; tombstoning the blocker unblocks shop/api.
    check(s, lambda: s.tombstone(ids["new"]), {"shop", "ops"})
    check(s, lambda: s.tombstone(ids["blocker"]), {"billing", "shop/api"})
    ids["b2"] = s.put("task", "Second blocker", project_id="ops")
    check(s, lambda: s.block(ids["b2"], ids["api"]), {"ops", "shop/api"})
    check(s, lambda: s.at(NOW).relate({"remove": [{"type": "BLOCKS", "from": ids["b2"], "to": ids["api"]}]}),
          {"shop/api"})
    check(s, lambda: s.at(NOW).update(ids["api"], {"valid_to": (NOW + timedelta(days=1)).isoformat()}), {"shop/api"})
    # A relate that changes nothing marks nothing.
    assert check(s, lambda: s.at(NOW).relate({"remove": [{"type": "BLOCKS", "from": ids["b2"], "to": ids["api"]}]})) \
        == set()


def test_sessions_imports_removals_and_the_demo_reset_mark_their_projects(db):
    s = Store(db)
    session = sessions.start(db, SessionStart(agent="agent-1", project_id="ops"), NOW)
    check(s, lambda: s.at(NOW).session_finish({"session_id": session, "handoff": "handed over"}), {"ops"})
    blocker = s.put("task", "Blocker", project_id="billing")
    s.put("task", "Blocked", project_id="shop", blocked_by=[blocker])
    lines = list(export_lines(db))
    db.wipe_all()
    moved = check(s, lambda: import_lines(db, lines))
    assert moved >= {"ops", "billing", "shop"}
    imported = [capsule_id for line in lines if '"capsule"' in line
                for capsule_id in [line.split('"id":"', 1)[1].split('"', 1)[0]]]
    check(s, lambda: remove_imported(db, [capsule_id for capsule_id in imported if capsule_id == blocker]),
          {"billing", "shop"})
    check(s, lambda: db.write(lambda tx: delete_project_tree(tx, "shop")), {"shop"})


def test_the_marks_of_a_rolled_back_write_vanish_with_it(db):
    s = Store(db)
    s.put("fact", "one", project_id="ops")
    before = markers(db)
    try:
        s.at(NOW).ingest({"items": [{"project_id": "billing", "kind": "fact", "content": "x"},
                                    {"project_id": "billing", "kind": "task", "content": "y", "blocks": ["cap-999"]}]})
    except Exception:
        pass
    assert markers(db) == before
