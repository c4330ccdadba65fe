"""Find ONE canonical cycle in a directed graph given as an edge list (SPEC §3 fail-closed check).

Pure and linear: Tarjan's strongly connected components, then one breadth-first search. No
path is ever enumerated, so a layered DAG with astronomically many paths costs what its
edges cost.

Canonical cycle: let m be the smallest node lying on any cycle (the smallest node of any
strongly connected component that has an internal edge). The answer is the SHORTEST cycle
through m, ties broken by the lexicographically smallest node sequence; it starts at m and
follows edge direction (each node has an edge to the next, the last to m). Breadth-first
search from m with neighbours taken in ascending order finds exactly that, so the answer
depends only on the set of edges, never on storage or traversal order.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Sequence

__all__ = ["find_cycle"]


def _adjacency(edges: Iterable[tuple[int, int]]) -> dict[int, list[int]]:
    successors: dict[int, set[int]] = {}
    for source, target in edges:
        successors.setdefault(source, set()).add(target)
        successors.setdefault(target, set())
    return {node: sorted(targets) for node, targets in successors.items()}


def _component_of_smallest_cyclic_node(graph: dict[int, list[int]]) -> tuple[int, set[int]] | None:
    """(m, its strongly connected component) for the smallest node on any cycle, or None."""
    index: dict[int, int] = {}
    low: dict[int, int] = {}
    on_stack: set[int] = set()
    stack: list[int] = []
    best: tuple[int, set[int]] | None = None
    counter = 0
    for root in sorted(graph):
        if root in index:
            continue
        # Iterative Tarjan: (node, position in its successor list).
        work: list[tuple[int, int]] = [(root, 0)]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, position = work[-1]
            successors = graph[node]
            if position < len(successors):
                work[-1] = (node, position + 1)
                nxt = successors[position]
                if nxt not in index:
                    index[nxt] = low[nxt] = counter
                    counter += 1
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, 0))
                elif nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                component: set[int] = set()
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.add(member)
                    if member == node:
                        break
                cyclic = len(component) > 1 or node in graph[node]
                if cyclic:
                    smallest = min(component)
                    if best is None or smallest < best[0]:
                        best = (smallest, component)
    return best


def _cyclic_core(sources: Sequence[int], targets: Sequence[int]) -> list[tuple[int, int]]:
    """The edges left after repeatedly removing nodes without incoming edges (Kahn's peeling).

    Every cycle survives; an acyclic graph leaves nothing. This is the fast path: a DAG is
    answered in one linear pass over plain ints, before any component bookkeeping.
    """
    successors: dict[int, list[int]] = {}
    indegree: dict[int, int] = {}
    for source, target in zip(sources, targets):
        successors.setdefault(source, []).append(target)
        indegree[target] = indegree.get(target, 0) + 1
    ready = [node for node in successors if node not in indegree]
    while ready:
        node = ready.pop()
        for target in successors.get(node, ()):
            left = indegree[target] - 1
            indegree[target] = left
            if left == 0:
                ready.append(target)
    alive = {node for node, count in indegree.items() if count > 0}
    return [(s, t) for s, t in zip(sources, targets) if s in alive and t in alive]


def find_cycle(sources: Sequence[int], targets: Sequence[int]) -> list[int] | None:
    """The canonical cycle (see module docstring) of the graph with edges sources[i] -> targets[i],
    as a node list starting at its smallest node; None when the graph is acyclic."""
    if len(sources) != len(targets):
        raise ValueError("sources and targets must have the same length")
    core = _cyclic_core(sources, targets)
    if not core:
        return None
    graph = _adjacency(core)
    found = _component_of_smallest_cyclic_node(graph)
    if found is None:
        return None
    start, component = found
    parent: dict[int, int] = {start: start}
    queue = deque([start])
    while queue:
        node = queue.popleft()
        for nxt in graph[node]:
            if nxt == start:
                path = [node]
                while path[-1] != start:
                    path.append(parent[path[-1]])
                return path[::-1]
            if nxt in component and nxt not in parent:
                parent[nxt] = node
                queue.append(nxt)
    raise AssertionError("a strongly connected component with an internal edge always closes a cycle")
