"""SPEC §11 sessions and handoff: `(:Session)-[:HANDED_OFF]->(:Capsule:Handoff)`.

Start opens a `(:Session {id: 'ses-<n>', agent, project_id, started_at})`. Finish, in ONE write
transaction: locks the session, then the agent's handoffs in its project (a `GraphsvcLock` named by
agent and project, so finishes of two sessions of one agent and project serialise and the later one
supersedes the earlier one's handoff: exactly one stays live), stores the handoff as a capsule of kind
`handoff` in the session's project through the ordinary ingest (so it is maintained, exported and read
like any capsule), superseding every live handoff of the same agent in that project, links it to the
session, records the session's `agent` on it and closes the session with the hash of the finish request.
The previous handoffs are found on the capsules by their `agent` (schema v5), not through the sessions:
sessions are not exported, so a store restored from an export holds the handoffs alone, and the next
finish must still supersede them. Finishing again with the same request answers what the first finish
did and writes nothing (idempotent); with another request it is a 409 naming the session; an unknown
session is a 404.

The handoff's content is the handoff text, then the next steps as a "Next steps:" list. A handoff
counts in no pack section (its kind is in none), so bootstrap never shows it; digest leads with the
newest live one in scope. Sessions themselves are not exported (the capsule, with its agent, is).
"""

from __future__ import annotations

import hashlib
import json
from datetime import datetime
from typing import Any, Callable

from neo4j import ManagedTransaction

from graphsvc.errors import Conflict, NotFound
from graphsvc.models import CapsuleIn, SessionFinish, SessionStart
from graphsvc.store.db import Database, run
from graphsvc.store.idempotency import Wrap, within
from graphsvc.store.ingest import _ingest


def start(db: Database, request: SessionStart, now: datetime, wrap: Wrap | None = None) -> str:
    """Open a session; its id."""
    return db.write(within(wrap, lambda tx: run(tx, "sessions/start", agent=request.agent,
                                                project_id=request.project_id, now=now)[0]["id"]))


def _finish_hash(request: SessionFinish) -> str:
    canonical = json.dumps(request.model_dump(), sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    return hashlib.sha256(canonical.encode("ascii")).hexdigest()


def handoff_lock(agent: str, project_id: str) -> str:
    """The name of the lock of an agent's handoffs in a project (JSON: no two pairs share one)."""
    return "handoffs " + json.dumps([agent, project_id], ensure_ascii=True, separators=(",", ":"))


def _finish(tx: ManagedTransaction, request: SessionFinish, now: datetime,
            visible: Callable[[str], bool], provenance: dict[str, str]) -> dict[str, Any]:
    rows = run(tx, "sessions/lock", id=request.session_id)
    # A session of a project outside the caller's scope is answered as an unknown one (docs/keys.md).
    if not rows or not visible(rows[0]["project_id"]):
        raise NotFound(f"session {request.session_id} does not exist; start one with memory_session_start",
                       field="session_id")
    session, digest = rows[0], _finish_hash(request)
    if session["finished"]:
        if session["finish_hash"] == digest:
            return {"session_id": request.session_id, "handoff_id": session["handoff_id"]}
        raise Conflict(f"session {request.session_id} is already finished with another handoff "
                       f"({session['handoff_id']}); start a new session to leave a new one", field="session_id")
    run(tx, "sessions/lock_handoffs", key=handoff_lock(session["agent"], session["project_id"]))
    previous = [r["id"] for r in run(tx, "sessions/previous_handoffs", agent=session["agent"],
                                     project_id=session["project_id"])]
    capsule = CapsuleIn(project_id=session["project_id"], kind="handoff", content=request.handoff_text(),
                        supersedes=previous)
    (handoff_id,) = _ingest(tx, [capsule], now, batch=False, visible=visible, provenance=provenance)
    run(tx, "sessions/finish", id=request.session_id, handoff_id=handoff_id, now=now, finish_hash=digest)
    return {"session_id": request.session_id, "handoff_id": handoff_id}


def finish(db: Database, request: SessionFinish, now: datetime, wrap: Wrap | None = None,
           visible: Callable[[str], bool] = lambda project_id: True,
           provenance: dict[str, str] | None = None) -> dict[str, Any]:
    """Close a session and store its handoff; {session_id, handoff_id}. `visible(project_id)`: whether
    the caller may see a session of that project; `provenance`: the writer the handoff records."""
    return db.write(within(wrap, lambda tx: _finish(tx, request, now, visible, provenance or {})))
