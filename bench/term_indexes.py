"""Rebuild the full-text term indexes before timing, so a store's figures do not depend on its write history.

Measured on the 1M store: after every capsule's tokens were rewritten, the terms scopes' 1M/10k
ratio rose by a fifth to a third until the indexes were rebuilt (README, "What is left of the gap").
"""

from __future__ import annotations

import time

from graphsvc.store.db import Database


def rebuild_term_indexes(db: Database) -> float:
    """Drop and recreate the `*_terms` indexes, waiting until they are online; the seconds it took."""
    began = time.perf_counter()
    db.apply_schema("maintenance/drop_term_indexes")
    db.apply_schema()
    return time.perf_counter() - began
