"""The state the pack reads instead of recomputing it: kept up to date by every write, in its transaction.

Maintained on each capsule (documented in docs/design.md, "Stored fields"; SPEC §1 allows them and
they never change an answer, only its cost):

* a label for its kind (`:Task`, `:Constraint`, …) beside `:Capsule`;
* `tokens`: its folded headline + content tokens (graphsvc.core.textmatch, so Unicode folding is
  Python's), for term coverage computed where the rows are; since schema v4 a token longer than
  Lucene indexes as one term is stored marked (`stored_token`);
* `superseded`: an incoming SUPERSEDES from a capsule that is not tombstoned;
* task/epic only: `open_blockers` (BLOCKS sources that still block: not done, not tombstoned,
  not superseded), `ready` (true when open, live and unblocked; absent otherwise) and `ord`
  (graphsvc.store.blocks_order);
* `counted`: the pack section the capsule counts in ('constraints', 'decisions', 'traps',
  'ready', or absent), and per project and section a `(:Tally {key, project_id, section, listed})`
  node holding how many capsules count there, so a pack's totals sum the fence's tallies instead
  of counting its capsules (expiry is subtracted at read time: it belongs to the request clock);
* `census`: the capsule's kind and the first of SPEC §9's stored states it is in, as
  '<kind>:tombstoned', '<kind>:superseded', '<kind>:blocked' (an open task/epic with open blockers:
  the digest's blocked section) or '<kind>:current' (blocked and current are live or expired: the
  request clock tells those apart), tallied per project like `counted` in a `(:CensusTally)` whose
  section is the census value (a label of its own, so the pack's head never reads it), so a
  digest's counts and blocked total sum the fence's tallies instead of reading every capsule of
  it (schema v6).

How a write keeps them: it names the capsules whose `superseded` may have changed, those whose
readiness may have changed and those it created or changed itself, and `refresh` recomputes
exactly those from the graph, inside the write's transaction. Recomputing (rather than adding
+1/-1) makes each field a pure function of the committed graph around it. Each refresh takes the
node's write lock BEFORE computing its value, so with concurrent writers the last one to commit a
node computed it after every other writer of that node had committed: the stored value is the
from-scratch value (tested by a thread race and a stateful property test).

The tallies are the one sum kept: when a capsule's recomputed `counted` or `census` differs from
the stored one, one count moves between two tallies, each tally locked before it is read, so
concurrent moves add up; `graphsvc verify` recounts every tally from scratch. An ingest creates its capsules already
counted (all but tasks/epics, whose readiness waits for the batch's edges) and adds them to their
tallies in one statement (`count_created`), instead of refreshing each new capsule.
"""

from __future__ import annotations

from collections import Counter
from typing import Any, Callable, Iterable

from neo4j import ManagedTransaction

from graphsvc.core.textmatch import text_tokens
from graphsvc.store import blocks_order, changes
from graphsvc.store.db import run

#: The schema this code writes and reads; `graphsvc migrate` brings older stores to it.
SCHEMA_VERSION = 6

#: Lucene's whitespace analyzer ends a term at 255 UTF-16 units and indexes the rest of a longer
#: token as further terms. Stored plainly, a piece such as the "bug" of 255 letters + "bug" would
#: equal a request token, and the full-text score (the coverage the pack ranks by) would count it.
LUCENE_TERM_UNITS = 255
#: So a longer token is stored as chunks of at most MARKED_CHUNK_UNITS units, each followed by
#: TOKEN_MARK: a mark every 201 units or sooner, and one at the end, puts a mark in every piece
#: the analyzer cuts (255 units, or the last), and folded tokens hold letters and digits only.
MARKED_CHUNK_UNITS = 200
TOKEN_MARK = "~"


def _units(text: str) -> int:
    """Length in UTF-16 code units, as Lucene counts."""
    return len(text.encode("utf-16-le")) // 2


def stored_token(token: str) -> str:
    """The token as `tokens` stores it and a request's terms are matched: itself, or if Lucene would
    index it in pieces, marked chunks (injective, and no piece of it equals any folded token)."""
    if len(token) * 2 <= LUCENE_TERM_UNITS or _units(token) <= LUCENE_TERM_UNITS:  # a char is 1 or 2 units
        return token
    chunks: list[str] = []
    chunk, used = "", 0
    for char in token:
        width = 2 if ord(char) > 0xFFFF else 1
        if used + width > MARKED_CHUNK_UNITS:
            chunks.append(chunk)
            chunk, used = "", 0
        chunk, used = chunk + char, used + width
    chunks.append(chunk)
    return "".join(part + TOKEN_MARK for part in chunks)


def kind_label(kind: str) -> str:
    """The node label of a kind: failure_pattern -> FailurePattern."""
    return "".join(part.capitalize() for part in kind.split("_"))


def folded_tokens(headline: str, content: str) -> list[str]:
    """The capsule's distinct folded tokens as stored (`stored_token`), sorted: what coverage counts against."""
    return sorted(map(stored_token, text_tokens(headline, content)))


def section_of(kind: str, tier: str, tombstoned: bool, superseded: bool, ready: bool) -> str | None:
    """`counted`: the rule of maintain/refresh_counted (and maintain/expected), for values known in Python."""
    if tombstoned:
        return None
    if kind == "constraint":
        return "constraints" if tier == "active" and not superseded else None
    if kind == "decision":
        return None if superseded else "decisions"
    if kind == "failure_pattern":
        return "traps"
    return "ready" if ready else None


def created_section(kind: str, tier: str) -> str | None:
    """`counted` of a capsule as created, for every kind but task/epic (their readiness waits for the
    batch's edges): the rule of maintain/refresh_counted for a capsule nothing supersedes yet."""
    return section_of(kind, tier, tombstoned=False, superseded=False, ready=False)


def census_of(kind: str, tombstoned: bool, superseded: bool, blocked: bool = False) -> str:
    """`census`: the rule of maintain/refresh_counted (and maintain/expected), for values known in
    Python; `blocked`: an open task/epic with open blockers."""
    state = "tombstoned" if tombstoned else "superseded" if superseded else "blocked" if blocked else "current"
    return f"{kind}:{state}"


def tallied_props(props: dict[str, Any]) -> list[str]:
    """The tallies a capsule's stored properties count it in, as `section|project_id` keys."""
    return [f"{props[name]}|{props['project_id']}" for name in ("counted", "census") if props.get(name) is not None]


def count_created(tx: ManagedTransaction, created: Iterable[dict[str, Any]]) -> None:
    """Add created capsules (their stored properties: `counted`, `census`) to their tallies: one
    statement, not a refresh of each new capsule (which locked and rewrote every one of them)."""
    deltas = Counter(key for props in created for key in tallied_props(props))
    if deltas:
        run(tx, "maintain/add_to_tallies", rows=[
            {"key": key, "project_id": key.split("|", 1)[1], "section": key.split("|", 1)[0], "delta": delta}
            for key, delta in sorted(deltas.items())])


def refresh(tx: ManagedTransaction, superseded: Iterable[str] = (), readiness: Iterable[str] = (),
            touched: Iterable[str] = ()) -> None:
    """Recompute `superseded` of the first ids, readiness of the second ids and of what they block,
    then `counted` (and the tallies) of all of those and of the `touched` ids.

    A capsule whose `superseded` may change is refreshed in step 1 and, with every capsule it
    blocks, in step 2 (a superseded blocker stops blocking). `touched`: capsules the write created
    or whose kind-relevant fields (tier, status, tombstone) it changed itself.
    """
    first = sorted(set(superseded))
    second = set(readiness) | set(first)
    if first:
        second.update(r["id"] for r in run(tx, "maintain/refresh_superseded", ids=first))
    if second:
        run(tx, "maintain/refresh_readiness", ids=sorted(second))
    third = second | set(touched)
    if third:
        run(tx, "maintain/refresh_counted", ids=sorted(third))


def remove(tx: ManagedTransaction, ids: list[str], removal: Callable[[], Any]) -> Any:
    """Run `removal` (which deletes the capsules `ids`) and keep the maintained state of every other
    capsule true: what they superseded may no longer be superseded, what they blocked may be ready.

    Those capsules are found before the removal and refreshed after it, in the same transaction,
    and the BLOCKS order's ords are made a permutation of the remaining task/epic seqs again.
    """
    if not ids:
        return removal()
    blocks_order.lock(tx)  # the order's ords are renumbered below: one lock order with every BLOCKS writer
    targets = run(tx, "maintain/removal_targets", ids=ids)
    touched = changes.affected_projects(tx, ids)  # read before the capsules go
    left = blocks_order.leaving(tx, ids)
    done = removal()
    blocks_order.close_order_gaps(tx, left)
    refresh(tx, superseded=[r["id"] for r in targets if r["type"] == "SUPERSEDES"],
            readiness=[r["id"] for r in targets if r["type"] == "BLOCKS"])
    changes.mark(tx, touched)  # watchers (SPEC §13)
    return done


def blocked_by_changes(tx: ManagedTransaction, ids: Iterable[str]) -> list[str]:
    """The ids plus every capsule they block: what a status or tombstone change can unblock."""
    wanted = sorted(set(ids))
    if not wanted:
        return []
    return sorted(set(wanted) | {r["id"] for r in run(tx, "maintain/blocked_targets", ids=wanted)})


def delete_project_tree(tx: ManagedTransaction, project_prefix: str) -> int:
    """Delete a project subtree's capsules, their edges and tallies (`graphsvc demo --reset`); the
    number deleted. What they superseded or blocked outside the subtree is refreshed (`remove`)."""
    ids = [r["id"] for r in run(tx, "maintenance/project_tree_ids", project_prefix=project_prefix)]
    return remove(tx, ids, lambda: run(tx, "maintenance/delete_project_tree", project_prefix=project_prefix,
                                       ids=ids)[0]["deleted"])
