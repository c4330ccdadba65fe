"""Rebuild the full-text term indexes before timing, so runs start from the same full-text state.

Lucene keeps the documents an update replaced until it merges their segments. Measured on the 1M
store (docs/design.md, "Measured and not built"): after every capsule's tokens were rewritten twice, the
terms scopes' 1M/10k ratio rose by a fifth to a third; a rebuild won back part of that in the one
run made. The option removes one source of difference between runs, not the machine's noise.
"""

from __future__ import annotations

import time

from graphsvc.store.db import Database


def rebuild_term_indexes(db: Database) -> float:
    """Drop and recreate the full-text term index, waiting until it is online; the seconds it took."""
    began = time.perf_counter()
    db.apply_schema("maintenance/drop_term_indexes")
    db.apply_schema()
    return time.perf_counter() - began
