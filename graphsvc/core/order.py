"""A topological order of the BLOCKS graph in which every cycle holds a marked edge (SPEC §3 cost).

Pure functions over integer capsule numbers (the `seq` of `cap-<seq>`); the store keeps the
order as the `ord` property of task/epic capsules and marks an edge `closes_loop` when it
could not be ordered. The invariant the pack relies on:

    for every BLOCKS edge a -> b that is NOT marked:  ord(a) < ord(b)

so a cycle (ord would have to increase all the way round) always contains a marked edge, and
a fence without a live marked edge is proven acyclic by an index lookup.

The ords are always a permutation of the task/epic seqs themselves: a new capsule takes
ord = seq (larger than every ord in use), and a reorder only permutes the ords of the nodes it
touches (Pearce & Kelly, "A dynamic topological sort algorithm for directed acyclic graphs",
2006). So ords stay unique without any allocator.
"""

from __future__ import annotations

import heapq
from array import array
from collections.abc import Iterable, Mapping, Sequence

__all__ = ["close_gaps", "from_scratch", "pool_reorder", "ranks"]


def from_scratch(seqs: Iterable[int], edges: Iterable[tuple[int, int]],
                 pool: Iterable[int] | None = None,
                 priority: Mapping[int, int] | None = None) -> tuple[dict[int, int], set[tuple[int, int]]]:
    """An order and its marked edges for a whole graph or a closed part of it (no edge leaves it).

    Kahn's algorithm taking the ready node of smallest `priority` first (default: its seq; a part
    of the graph passes its current ords, so what was in order keeps its place and few ords move);
    when only cycles remain, the remaining node of smallest priority is placed next and its unplaced
    in-edges become marked. Deterministic.
    Returns ({seq: ord}, {marked (from, to)}): the nodes in that order take the sorted `pool`
    (default: the seqs themselves; a part of the graph reuses the ords it already holds).
    """
    nodes = sorted(set(seqs))
    values = sorted(pool) if pool is not None else nodes
    if len(values) != len(nodes):
        raise ValueError("the pool must hold one ord per node")
    successors: dict[int, list[int]] = {n: [] for n in nodes}
    indegree: dict[int, int] = {n: 0 for n in nodes}
    unique_edges = sorted(set(edges))
    for a, b in unique_edges:
        if a not in successors or b not in successors:
            raise ValueError(f"edge {a}->{b} joins a node outside the graph")
        successors[a].append(b)
        indegree[b] += 1
    key = priority if priority is not None else {n: n for n in nodes}
    heap = [(key[n], n) for n in nodes if indegree[n] == 0]
    heapq.heapify(heap)
    placed: list[int] = []
    done: set[int] = set()
    remaining = set(nodes)
    while remaining:
        if not heap:  # only cycles left: break one at its first node
            first = min(remaining, key=lambda n: (key[n], n))
            heap.append((key[first], first))
        node = heapq.heappop(heap)[1]
        if node in done:
            continue
        done.add(node)
        remaining.discard(node)
        placed.append(node)
        for nxt in successors[node]:
            indegree[nxt] -= 1
            if indegree[nxt] == 0 and nxt not in done:
                heapq.heappush(heap, (key[nxt], nxt))
    ord_of = {node: rank for node, rank in zip(placed, values)}
    marked = {(a, b) for a, b in unique_edges if ord_of[a] >= ord_of[b]}
    return ord_of, marked


def ranks(count: int, sources: Sequence[int], targets: Sequence[int]) -> array:
    """`from_scratch` for a large graph in flat arrays: nodes are 0..count-1 (their index is their
    priority, e.g. positions in seq order) and edge i is sources[i] -> targets[i] (no duplicates).

    Returns each node's position in the order (array of count integers): with `nodes` sorted by
    seq, node i takes the ord nodes[rank[i]], exactly the ord `from_scratch(nodes, edges)` gives it.
    A few machine words per node and edge (an import orders a million tasks in one pass) instead of
    from_scratch's dicts and sets of boxed integers.
    """
    offsets = array("q", bytes(8 * (count + 1)))
    for a in sources:
        offsets[a + 1] += 1
    for i in range(count):
        offsets[i + 1] += offsets[i]
    successors = array("q", bytes(8 * len(sources)))
    fill = array("q", offsets[:count])
    indegree = array("q", bytes(8 * count))
    for a, b in zip(sources, targets):
        successors[fill[a]] = b
        fill[a] += 1
        indegree[b] += 1
    del fill
    heap = [node for node in range(count) if indegree[node] == 0]  # ascending: already a heap
    done = bytearray(count)
    rank = array("q", bytes(8 * count))
    placed = 0
    lowest = 0  # every node below it is placed: the cycle-breaking pick scans forward only
    while placed < count:
        if not heap:  # only cycles left: break one at the remaining node of smallest priority
            while done[lowest]:
                lowest += 1
            heap.append(lowest)
        node = heapq.heappop(heap)
        if done[node]:
            continue
        done[node] = 1
        rank[node] = placed
        placed += 1
        for position in range(offsets[node], offsets[node + 1]):
            nxt = successors[position]
            indegree[nxt] -= 1
            if indegree[nxt] == 0 and not done[nxt]:
                heapq.heappush(heap, nxt)
    return rank


def pool_reorder(backward: Mapping[int, int], forward: Mapping[int, int]) -> dict[int, int]:
    """Pearce–Kelly's reassignment after inserting x -> y against the order.

    `backward` = {node: ord} of what reaches x (x included) with ord > ord(y); `forward` = what y
    reaches (y included) with ord < ord(x), and the two are disjoint (else x -> y closes a cycle).
    The backward nodes keep their relative order and move before the forward ones, reusing the
    same pool of ords; every other node keeps its ord. Returns only the nodes whose ord changes.
    """
    if set(backward) & set(forward):
        raise ValueError("backward and forward regions overlap: the new edge closes a cycle")
    pool = sorted([*backward.values(), *forward.values()])
    ordered: Sequence[int] = [n for n, _ in sorted(backward.items(), key=lambda item: item[1])] + \
                             [n for n, _ in sorted(forward.items(), key=lambda item: item[1])]
    current = {**backward, **forward}
    return {node: value for node, value in zip(ordered, pool) if current[node] != value}


def close_gaps(held: Iterable[tuple[str, int]], seqs: Iterable[int]) -> dict[str, int]:
    """After capsules left the DAG: new ords for the survivors `held` ((id, ord), each ord at or above
    some bound) so that their ords are again exactly `seqs` (the survivors' seqs at or above it).

    The k-th smallest ord becomes the k-th smallest seq, so the survivors keep their relative order
    and the order stays topological (and every closes_loop mark true). Only changed ords are returned.
    """
    ordered = sorted(held, key=lambda pair: pair[1])
    targets = sorted(seqs)
    if len(ordered) != len(targets):
        raise ValueError(f"{len(ordered)} ords cannot become {len(targets)} seqs")
    return {capsule_id: seq for (capsule_id, ord_), seq in zip(ordered, targets) if ord_ != seq}
