"""A deterministic synthetic capsule store for benchmarks (bench-only; the service never imports it).

The shape follows a busy multi-project store: 20 projects with sub-projects, mostly facts and
docs, ~1% constraints, ~8% decisions, ~4% failure patterns, tasks with sparse BLOCKS edges,
expired / superseded / tombstoned / stale capsules sprinkled in, `updated_at` spread over a
year. Two DAGs stress the ready set and the cycle check:

* a "blocks DAG" of `dag_nodes` tasks whose topological order is a random permutation of their
  ids, so about half of its edges point from a newer to an older capsule (back edges, the
  expensive case for the cycle check);
* an adversarial layered DAG (`layers` x `width`, each node blocking 2 nodes of the next layer:
  width * 2^(layers-1) paths), built newest-first so every edge is a back edge.

Loaded with the bench-only UNWIND statements in `cypher/bench/` in batches of 1000.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from typing import Any

from graphsvc.store.db import Database, run

NOW = datetime(2026, 12, 1, 12, 0, tzinfo=timezone.utc)
PROJECTS = [f"p{i:02d}" for i in range(20)]
SUBPROJECTS = [p + s for p in PROJECTS for s in ("", "/api", "/web")]
DAG_PROJECT = "p00/dag"
LAYERED_PROJECT = "p01/layers"
BATCH = 1000

_SYLLABLES = ["ka", "lo", "mi", "ne", "ru", "sa", "ti", "vo", "ze", "pa", "qu", "do", "fe", "gi", "ho", "ju"]


def vocabulary(rng: random.Random, size: int = 2000) -> list[str]:
    words: set[str] = set()
    while len(words) < size:
        words.add("".join(rng.choice(_SYLLABLES) for _ in range(rng.randint(2, 4))))
    return sorted(words)


@dataclass
class Dataset:
    capsules: list[dict[str, Any]] = field(default_factory=list)
    blocks: list[list[int]] = field(default_factory=list)
    supersedes: list[list[int]] = field(default_factory=list)
    words: list[str] = field(default_factory=list)

    def add(self, row: dict[str, Any]) -> int:
        seq = len(self.capsules) + 1
        row["seq"] = seq
        row["id"] = f"cap-{seq}"
        self.capsules.append(row)
        return seq


def _capsule(rng: random.Random, words: list[str], project_id: str, kind: str) -> dict[str, Any]:
    text_words = [rng.choice(words) for _ in range(rng.randint(20, 80))]
    headline = " ".join(text_words[:8]).capitalize()
    updated = NOW - timedelta(seconds=rng.randint(0, 365 * 86400))
    row: dict[str, Any] = {
        "project_id": project_id,
        "kind": kind,
        "tier": "active",
        "headline": headline,
        "content": headline + "\n" + " ".join(text_words[8:]),
        "created_at": updated - timedelta(days=rng.randint(0, 30)),
        "updated_at": updated,
    }
    if kind in ("task", "epic"):
        row["status"] = "done" if rng.random() < 0.3 else "open"
    if kind == "failure_pattern" and rng.random() < 0.2:
        row["tier"] = "stale"
    if kind == "constraint" and rng.random() < 0.1:
        row["tier"] = "archived"
    if kind in ("constraint", "decision") and rng.random() < 0.05:
        row["valid_to"] = NOW - timedelta(days=1)
    if rng.random() < 0.02:
        row["tombstoned_at"] = updated
    return row


#: The seed of every bench dataset: its vocabulary is the first thing drawn from it.
SEED = 7


def build(total: int, *, seed: int = SEED) -> Dataset:
    """`total` capsules: 10% blocks DAG, 1000 (or 5%) layered DAG, the rest general."""
    rng = random.Random(seed)
    data = Dataset(words=vocabulary(rng))
    dag_nodes = total // 10
    width, layers = (20, 50) if total >= 20_000 else (10, max(2, total // 200))
    general = total - dag_nodes - width * layers
    kinds = (["constraint"] * 1 + ["decision"] * 8 + ["failure_pattern"] * 4 + ["task"] * 8 + ["epic"] * 1
             + ["fact"] * 30 + ["doc"] * 20 + ["procedure"] * 15 + ["capability"] * 8 + ["brainstorm"] * 5)
    tasks: dict[str, list[int]] = {}
    decisions: list[int] = []
    for _ in range(general):
        kind = rng.choice(kinds)
        project = rng.choice(SUBPROJECTS)
        seq = data.add(_capsule(rng, data.words, project, kind))
        if kind in ("task", "epic"):
            earlier = tasks.setdefault(project, [])
            if earlier and rng.random() < 0.5:
                data.blocks.append([rng.choice(earlier[-50:]), seq])
            earlier.append(seq)
        if kind == "decision":
            if decisions and rng.random() < 0.03:
                data.supersedes.append([seq, rng.choice(decisions)])
            decisions.append(seq)
    # The blocks DAG: topological order = a random permutation of the ids.
    dag = [data.add(_capsule(rng, data.words, DAG_PROJECT, "task")) for _ in range(dag_nodes)]
    order = dag[:]
    rng.shuffle(order)
    for position, seq in enumerate(order[1:], start=1):
        for _ in range(2):
            data.blocks.append([order[rng.randrange(max(0, position - 200), position)], seq])
    # The layered DAG, newest layer first: every edge goes from a newer to an older capsule.
    grid = [[0] * width for _ in range(layers)]
    for layer in reversed(range(layers)):
        for slot in range(width):
            row = _capsule(rng, data.words, LAYERED_PROJECT, "task")
            row["status"] = "open"
            grid[layer][slot] = data.add(row)
    for layer in range(layers - 1):
        for slot in range(width):
            for step in (0, 1):
                data.blocks.append([grid[layer][slot], grid[layer + 1][(slot + step) % width]])
    data.blocks = [list(edge) for edge in dict.fromkeys(tuple(e) for e in data.blocks)]
    return data


def load(db: Database, data: Dataset) -> None:
    """Write the dataset with the bench-only UNWIND loaders, 1000 rows per transaction."""
    for start in range(0, len(data.capsules), BATCH):
        rows = data.capsules[start:start + BATCH]
        db.write(lambda tx, rows=rows: run(tx, "bench/load_capsules", rows=rows))
    for name, edges in (("bench/load_blocks", data.blocks), ("bench/load_supersedes", data.supersedes)):
        for start in range(0, len(edges), BATCH):
            batch = edges[start:start + BATCH]
            db.write(lambda tx, batch=batch, name=name: run(tx, name, edges=batch))
    db.write(lambda tx: run(tx, "bench/set_counter", value=len(data.capsules)))
