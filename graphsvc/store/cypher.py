"""Cypher text lives in `cypher/*.cypher`, loaded by name; Python never builds query text.

Keeping statements in files lets operators read and paste them, and keeps user
text out of query text: every value reaches Neo4j as a parameter.
"""

from __future__ import annotations

import os
from functools import lru_cache
from pathlib import Path

_PACKAGED = Path(__file__).resolve().parent.parent / "_cypher"
_REPO = Path(__file__).resolve().parent.parent.parent / "cypher"


def cypher_dir() -> Path:
    override = os.environ.get("GRAPHSVC_CYPHER_DIR")
    if override:
        return Path(override)
    return _PACKAGED if _PACKAGED.is_dir() else _REPO


@lru_cache(maxsize=None)
def load(name: str) -> str:
    """The statement in `cypher/<name>.cypher` (name may contain `/`), as sent to Neo4j.

    Whole-line comments and indentation are left in the file, for the reader: the driver
    packs (and formats for its debug log) the full text on every run, and the pack's
    statement is mostly commentary, so sending it bare saves a quarter of its bytes per call.
    A line's own text, trailing comments included, is kept as written.
    """
    path = cypher_dir() / f"{name}.cypher"
    lines = [line.strip() for line in path.read_text(encoding="utf-8").splitlines()]
    text = "\n".join(line for line in lines if line and not line.startswith("//"))
    if not text:
        raise ValueError(f"empty Cypher file: {path}")
    return text


def load_statements(name: str) -> list[str]:
    """A file of several `;`-terminated statements (schema), without comment-only chunks."""
    statements = []
    for chunk in load(name).split(";"):
        lines = [line for line in chunk.splitlines() if line.strip() and not line.strip().startswith("//")]
        if lines:
            statements.append("\n".join(lines))
    return statements
