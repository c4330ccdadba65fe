"""SPEC §10 aliases: taught synonyms, stored as `(:Alias {key, scope, term, aliases, project_prefix?})`.

One node per term and scope, so Neo4j Browser shows "postgres -> [pg, psql]" as one node. `term` and
each alias are stored folded (graphsvc.core.retrieve.alias_key: the tokens, in order, space-joined),
the form they are compared in; `scope` is the project_prefix or '' for the whole store (indexed: a
retrieve reads the scopes enclosing its fence). Writes lock the node (MERGE on the unique key) and
write the new set in the same transaction, so teaching twice or concurrently is idempotent, and an
emptied set deletes its node. Retrieve reads them (graphsvc.store.retrieve); bootstrap never does.
"""

from __future__ import annotations

from typing import Any

from neo4j import ManagedTransaction

from graphsvc.core.retrieve import alias_key
from graphsvc.errors import InvalidInput
from graphsvc.models import MAX_ALIASES, AliasListRequest, AliasRequest
from graphsvc.store.db import Database, run
from graphsvc.store.idempotency import Wrap, within


def enclosing_scopes(project_id: str | None, project_prefix: str | None) -> list[str]:
    """The alias scopes that hold for a fence: '' (store-wide) and every prefix the fence lies inside.

    A fence lies inside prefix P when its project_id or its project_prefix is P or below it; without
    a fence (the whole store) only the store-wide aliases hold.
    """
    scopes = {""}
    for fence in (project_id, project_prefix):
        if fence is not None:
            parts = fence.split("/")
            scopes.update("/".join(parts[:end]) for end in range(1, len(parts) + 1))
    return sorted(scopes)


def read_pairs(tx: ManagedTransaction, scopes: list[str]) -> list[tuple[str, str]]:
    """(term, alias) pairs taught in these scopes, in a stable order."""
    return [(r["term"], alias) for r in run(tx, "aliases/in_scopes", scopes=scopes) for alias in r["aliases"]]


def _node_key(scope: str, term: str) -> str:
    return f"{scope}|{term}"


def node_key(request: AliasRequest) -> str:
    """The key of the node a request writes: its scope and its folded term."""
    return _node_key(request.project_prefix or "", alias_key(request.term))


def self_alias(request: AliasRequest) -> tuple[int, str] | None:
    """The first alias that folds to the request's own term, as (its index, the rule it breaks), or None.
    The rules a request breaks alone live here and in `too_many`, so an import checks its alias lines
    by them before it writes anything (graphsvc.store.transfer)."""
    term = alias_key(request.term)
    for index, alias in enumerate(request.aliases):
        if alias_key(alias) == term:
            return index, (f"'{alias}' is the term itself (both fold to '{term}'); an alias must differ "
                           "from its term")
    return None


def too_many(term: str, count: int) -> str:
    """The rule a term breaks when teaching would leave it more than MAX_ALIASES aliases in one scope."""
    return (f"'{term}' would have {count} aliases in this scope, more than {MAX_ALIASES}; "
            "forget some first (forget: true)")


def merged(stored: list[str], request: AliasRequest) -> list[str]:
    """The term's set once the request is taught (not forgotten) over what is stored: sorted, folded."""
    return sorted(set(stored) | {alias_key(alias) for alias in request.aliases})


def stored_sets(tx: ManagedTransaction, keys: list[str]) -> dict[str, list[str]]:
    """The stored aliases of these nodes (by `node_key`); a key without a node is left out."""
    return {r["key"]: list(r["aliases"]) for r in run(tx, "aliases/by_keys", keys=keys)}


def lock_sets(tx: ManagedTransaction, requests: list[AliasRequest]) -> dict[str, list[str]]:
    """Lock the nodes these requests write (creating empty ones), in key order so two importers take
    them in one order, and return their stored sets by `node_key`: read under the lock, no
    memory_alias can change them before `tx` ends."""
    nodes = {node_key(request): (request.project_prefix or "", alias_key(request.term)) for request in requests}
    return {key: list(run(tx, "aliases/lock", key=key, scope=scope, term=term)[0]["aliases"])
            for key, (scope, term) in sorted(nodes.items())}


def _teach(tx: ManagedTransaction, request: AliasRequest) -> dict[str, Any]:
    scope, term = request.project_prefix or "", alias_key(request.term)
    refused = self_alias(request)
    if refused is not None:
        raise InvalidInput(f"aliases[{refused[0]}]: {refused[1]}", field=f"aliases[{refused[0]}]")
    key = _node_key(scope, term)
    stored = run(tx, "aliases/lock", key=key, scope=scope, term=term)[0]["aliases"]
    if request.forget:
        given = {alias_key(alias) for alias in request.aliases}
        aliases = [] if not request.aliases else [alias for alias in stored if alias not in given]
    else:
        aliases = merged(stored, request)
        if len(aliases) > MAX_ALIASES:
            raise InvalidInput(f"aliases: {too_many(term, len(aliases))}", field="aliases")
    run(tx, "aliases/store", key=key, scope=scope, aliases=aliases)
    answer: dict[str, Any] = {"term": term, "aliases": aliases}
    if request.project_prefix is not None:
        answer["project_prefix"] = request.project_prefix
    return answer


def teach(db: Database, request: AliasRequest, wrap: Wrap | None = None) -> dict[str, Any]:
    """Teach (or, with `forget`, remove) a term's aliases in one scope; the term's set as it now stands."""
    return db.write(within(wrap, lambda tx: _teach(tx, request)))


def _listing(rows: list[Any]) -> list[dict[str, Any]]:
    listed = []
    for r in rows:
        entry: dict[str, Any] = {"term": r["term"], "aliases": list(r["aliases"])}
        if r["scope"]:
            entry["project_prefix"] = r["scope"]
        listed.append(entry)
    return listed


def list_aliases(db: Database, request: AliasListRequest) -> dict[str, Any]:
    """The alias sets a retrieve with this fence would use, by scope ('' first) then term."""
    scopes = enclosing_scopes(request.project_id, request.project_prefix)
    return {"aliases": _listing(db.read(lambda tx: run(tx, "aliases/in_scopes", scopes=scopes)))}


def export_rows(db: Database) -> list[dict[str, Any]]:
    """Every alias set as an export line's body (graphsvc.store.transfer)."""
    return _listing(db.query("transfer/export_aliases"))


def import_sets(tx: ManagedTransaction, sets: list[AliasRequest]) -> None:
    """Teach imported alias sets (merged with what is stored: importing twice changes nothing)."""
    for alias_set in sets:
        _teach(tx, alias_set)
