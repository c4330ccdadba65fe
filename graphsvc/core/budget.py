"""Token accounting for a pack: one cost function and a priority-prefix fill.

The budget is a contract, so the accounting has to be simple enough to audit
from the returned JSON alone: every row, ready head and handle id present in
the pack costs :func:`token_cost` of itself, and ``used_tokens`` is their sum.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable
from typing import Any

__all__ = ["BudgetFill", "token_cost"]


def token_cost(value: Any) -> int:
    """Approximate tokens as ceil(chars / 4) of the compact, key-sorted JSON.

    The ONE cost function: rows, heads and handles are all charged with it.
    ``ensure_ascii=False`` so a non-Latin character costs one char, as it does
    on the wire, not the six of a ``\\uXXXX`` escape.
    """
    serialized = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return math.ceil(len(serialized) / 4)


class BudgetFill:
    """Admits content in priority order until the first thing that does not fit.

    Floors are charged unconditionally (when the budget is positive) so that
    the safety core is never trimmed. Every other content row is admitted
    together with the handle ids it adds; once one row does not fit, the fill
    closes and it and every later row are trimmed — a smaller row further
    down never skips ahead, so the kept pack is always a prefix.

    With a zero budget nothing is charged at all; rows (including floor rows)
    are only counted as trimmed, and ``floor_tokens`` still reports what the
    floors would have cost.
    """

    def __init__(self, token_budget: int) -> None:
        if token_budget < 0:
            raise ValueError(f"token_budget must be >= 0, got {token_budget}")
        self.token_budget = token_budget
        self.used_tokens = 0
        self.floor_tokens = 0
        self.trimmed_rows = 0
        self._charged_ids: set[str] = set()
        self._closed = token_budget == 0

    @property
    def remaining(self) -> int:
        """Tokens still available; negative only after the floors overshoot."""
        return self.token_budget - self.used_tokens

    def _new_handle_ids(self, ids: Iterable[str]) -> list[str]:
        new: list[str] = []
        for capsule_id in ids:
            if capsule_id not in self._charged_ids and capsule_id not in new:
                new.append(capsule_id)
        return new

    def charge_floor(self, cost: int, ids: Iterable[str], *, is_row: bool) -> bool:
        """Charge a floor item and its handles regardless of the remaining budget.

        ``is_row`` says whether the item is a capsule row (the first
        constraint, the next action) rather than a cycle / nothing-ready
        marker; only rows count as trimmed when the budget is zero.
        Returns whether the item is part of the pack.
        """
        new_ids = self._new_handle_ids(ids)
        total = cost + sum(token_cost(capsule_id) for capsule_id in new_ids)
        self.floor_tokens += total
        self._charged_ids.update(new_ids)
        if self.token_budget == 0:
            if is_row:
                self.trimmed_rows += 1
            return False
        self.used_tokens += total
        return True

    def admit(self, cost: int, ids: Iterable[str]) -> bool:
        """Admit one content row with its new handles if both fit; else close the fill."""
        if not self._closed:
            new_ids = self._new_handle_ids(ids)
            total = cost + sum(token_cost(capsule_id) for capsule_id in new_ids)
            if total <= self.remaining:
                self.used_tokens += total
                self._charged_ids.update(new_ids)
                return True
            self._closed = True
        self.trimmed_rows += 1
        return False
