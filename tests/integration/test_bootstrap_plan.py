"""The pack statements' plans: index seeks for every section, no path enumeration anywhere.

The ready set is sought through its maintained `ready` (a blocked task is never visited), the
ranked sections' one block reads its decay order from an index (per project of a fence, or the
store's), and the cycle proof goes through the BLOCKS(closes_loop) relationship index.

EXPLAIN on the real Neo4j, so a planner regression (a label scan over the whole store, a
var-length expand) fails here instead of showing up as latency in production.
"""

from __future__ import annotations

from typing import Any, Iterator

from graphsvc.store import cypher
from graphsvc.models import BootstrapRequest
from graphsvc.store.bootstrap import pack_statements, section_runs, statement_parameters, unread_head
from graphsvc.store.db import statement_arguments
from graphsvc.store.warmup import STATEMENTS

from .bootstrap_support import NOW, Store

PATH_OPERATORS = ("VarLengthExpand", "ShortestPath", "StatefulShortestPath", "BFSPruningVarExpand", "Repeat", "Trail")


def operators(plan: dict[str, Any]) -> Iterator[tuple[str, str, bool]]:
    """(operator, details, is_leaf) for every operator of the plan."""
    children = plan.get("children", [])
    yield plan["operatorType"].split("@")[0], str(plan.get("args", {}).get("Details", "")), not children
    for child in children:
        yield from operators(child)


def explain(db, scope: tuple[str, ...] | None = None, **fence: Any) -> list[tuple[str, str, bool]]:
    """The operators of both pack statements' plans (the section statement's runs share one);
    `scope`: a scoped API key's prefixes (graphsvc.access), which fence like a request's fence."""
    params = statement_parameters(BootstrapRequest(terms=["parser"], **fence), NOW, scope)
    plan = []
    for statement, arguments in zip(pack_statements(params["project_id"], params["project_prefix"], scope),
                                    (params, section_runs(params, unread_head(["nott"]))[0])):
        summary = db._driver.execute_query("EXPLAIN " + cypher.load(statement),
                                           statement_arguments(statement, arguments)).summary
        plan.extend(operators(summary.plan))
    return plan


def test_every_section_seeks_an_index_and_no_path_is_enumerated(db):
    # Enough capsules over enough projects that a label scan is never the cheaper plan (on a
    # few dozen nodes the cost-based planner may rightly prefer one), and no plan cached from an
    # earlier test's statistics.
    s = Store(db)
    kinds = ["constraint", "decision", "failure_pattern", "task", "fact"]
    projects = ["nott", "nott/x", "other"] + [f"p{n:02d}" for n in range(37)]
    for batch in range(3):
        s.many([{"project_id": projects[n % len(projects)], "kind": kinds[n % len(kinds)],
                 "content": f"capsule {batch}-{n}"} for n in range(1000)])
    db._driver.execute_query("CALL db.clearQueryCaches()")
    for fence in ({}, {"project_prefix": "nott"}, {"project_id": "nott/x"}, {"scope": ("nott", "p01")}):
        plan = explain(db, **fence)
        ops = [op for op, _, _ in plan]
        # Every place the plan finds nodes from scratch is an index; the rest starts from rows it
        # already has (Argument). The planner may split a seek (OR leaves).
        leaves = [(op, details) for op, details, leaf in plan if leaf]
        # A fence's ranked sections: per project of the fence, the listed rows of the section
        # (its `counted`) from the (counted, project_id, updated_at) index
        kinds = [d for op, d in leaves if op.startswith("NodeIndexSeek")
                 and "c:Capsule(counted, project_id, updated_at)" in d and "project_id = p" in d]
        loops = [d for op, d in leaves if "RelationshipIndexSeek" in op and "BLOCKS(closes_loop)" in d]
        live = [d for op, d in leaves if op == "NodeIndexSeek" and "Capsule(status, project_id)" in d]
        # totals: the fence's tallies, less the expired listed capsules (schema v3)
        tallies = [d for op, d in leaves if op.startswith("NodeIndexSeek") and "t:Tally(project_id)" in d]
        expired = [d for op, d in leaves if op.startswith("NodeIndexSeek") and "Capsule(counted, project_id, valid_to)" in d]
        assert tallies and expired, leaves
        # claims (SPEC §12): the live leases, through the lease_until index (a range from now on)
        leases = [d for op, d in leaves if op.startswith("NodeIndexSeek") and "Capsule(lease_until)" in d]
        assert leases, leaves
        # the one section block: the fenced floor (from each of the fence's projects its k freshest
        # rows), then each project's rows from the floor on (two seeks, possibly split)
        if fence:
            assert len(kinds) >= 2, leaves
        else:  # the whole store's statement carries no fenced branch
            assert not kinds, leaves
        # "no cycle" by loop edges, the live edges only behind them
        assert loops and live, leaves
        # With no fence the ranked sections read the decay order from an updated_at index (the k-th
        # freshest row, then every row from its microsecond on) and, with terms, the rows holding a
        # term token from a full-text index over the maintained `tokens`.
        decay = [d for op, d in leaves if op.startswith("NodeIndexSeek") and "c:Capsule(counted, updated_at)" in d]
        covering = [d for op, d in leaves if op == "ProcedureCall" and "db.index.fulltext.queryNodes" in d]
        # the section block: its floor, then the rows from the floor on; a seek possibly split
        if fence:  # a fenced pack's statement carries no store-wide branch
            assert not decay, leaves
        else:
            assert len(decay) >= 2, leaves
        # With terms, the cut (the k-th best coverage) reads the coverage-scoring full-text query
        # from a one-row guard: a procedure call on no index of its own.
        cuts = [d for op, d in leaves if op == "Unwind" and "$arg.rank_query IS NULL" in d]
        # The section statement starts from its arguments: the sections it ranks, the fence's projects.
        # The head seeks the tallies once per prefix: of a key's scope, or the request's one fence.
        given = [d for op, d in leaves if (op == "Unwind" and d.startswith("$arg.sections AS s"))
                 or (op == "Unwind" and d.startswith("coalesce($arg.scope, ") and d.endswith(" AS seek"))
                 or (op == "Projection" and d.startswith("$arg.fence_projects AS fence_projects"))]
        assert all(op == "Argument" or d in kinds + loops + live + decay + covering + cuts + tallies + expired + leases + given
                   for op, d in leaves), leaves
        assert not {"NodeByLabelScan", "AllNodesScan"} & set(ops), ops
        assert not [op for op in ops if op.startswith(PATH_OPERATORS)], ops


def test_no_write_statement_scans_the_store_and_the_order_searches_start_from_the_new_edge(db):
    # A relate against the order runs these two searches per edge; a plan that starts from every
    # capsule instead of from $start took ~100 s a call on a 100k store (seen on the bench).
    # Like a real store: most capsules are not tasks, so only a fifth carry an `ord` (the shape on
    # which the planner once preferred scanning the ord index to seeking $start).
    s = Store(db)
    for batch in range(4):
        s.many([{"project_id": f"p{n % 7}", "kind": "fact", "content": f"fact {batch}-{n}"} for n in range(1000)])
    tasks = s.many([{"project_id": f"p{n % 7}", "kind": "task", "content": f"task {n}"} for n in range(1000)])
    s.at(NOW).relate({"add": [{"type": "BLOCKS", "from": tasks[n], "to": tasks[n + 1]} for n in range(0, 998, 2)]})
    db._driver.execute_query("CALL db.clearQueryCaches()")
    searched = {"start": tasks[5], "bound": 10}  # the planner's choice here depends on the values
    order_first = sorted(STATEMENTS, key=lambda statement: statement[0] not in ("order/forward", "order/backward"))
    for name, params in order_first:  # every statement a write runs (graphsvc.store.warmup)
        params = searched if name in ("order/forward", "order/backward") else params
        summary = db._driver.execute_query("EXPLAIN " + cypher.load(name), statement_arguments(name, params)).summary
        leaves = [(op, details) for op, details, leaf in operators(summary.plan) if leaf]
        # The watchers' next instant may scan the (project_id, lease_until) and (project_id, valid_to)
        # indexes: they hold only capsules under a lease or with an end of validity, never the store.
        assert not [op for op, details in leaves if "Scan" in op and not (
            name == "changes/next_instant_fenced" and op == "NodeIndexScan"
            and ("c:Capsule(project_id, lease_until)" in details or "c:Capsule(project_id, valid_to)" in details))
        ], (name, leaves)
        if name in ("order/forward", "order/backward"):
            assert [op for op, _ in leaves] == ["NodeUniqueIndexSeek"], (name, leaves)
            assert "Capsule(id)" in leaves[0][1], (name, leaves)


def seeks(plan: Any) -> Iterator[tuple[str, int]]:
    """(details, rows produced) of every index seek of a PROFILEd plan."""
    if plan["operatorType"].split("@")[0].startswith("NodeIndexSeek"):
        yield str(plan.get("args", {}).get("Details", "")), plan.get("rows", 0)
    for child in plan.get("children", []):
        yield from seeks(child)


def test_a_section_floor_reads_only_its_k_freshest_rows_whatever_the_section_holds(db):
    # The floor (the k-th freshest row of a section) is read in the index's order and stops after
    # k rows. A plan that splits the seek (an OR of the lease filter planned as a union of two
    # seeks) loses that order and sorts every row of the section: a budget-0 pack of a 3,000-row
    # store then read all of them, and the whole store's pack cost grew with the store.
    s = Store(db)
    projects = ["nott", "nott/x"]
    for batch in range(3):
        s.many([{"project_id": projects[n % 2], "kind": ("constraint", "decision", "failure_pattern", "task")[n % 4],
                 "content": f"capsule {batch}-{n}"} for n in range(1000)])
    db._driver.execute_query("CALL db.clearQueryCaches()")
    for fence in ({}, {"project_prefix": "nott"}):
        params = statement_parameters(BootstrapRequest(token_budget=0, **fence), NOW)
        _, statement = pack_statements(params["project_id"], params["project_prefix"])
        for run in section_runs(params, unread_head(projects)):
            for section in run["sections"]:
                arguments = statement_arguments(statement, {**run, "sections": [section]})
                summary = db._driver.execute_query("PROFILE " + cypher.load(statement), arguments).summary
                floor = [rows for details, rows in seeks(summary.profile) if "updated_at < $arg.now" in details]
                assert floor, (fence, section["name"])
                # at most k per project the fence lists, or k for the whole store
                assert sum(floor) <= run["top"] * (len(projects) if fence else 1), (fence, section["name"], floor)
