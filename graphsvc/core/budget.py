"""Token accounting for a pack: one cost rule, a self-counting settle, a prefix search.

The budget is a contract (SPEC §4), so the number must be checkable from the response
alone: ``used_tokens == ceil(len(body) / 4)`` where ``body`` is the canonical text
(:mod:`graphsvc.core.canonical`) the surfaces send, the envelope and the ``budget``
object included. Three small tools make that exact instead of approximate:

* :func:`token_cost` — ceil(chars / 4) of a value's canonical JSON; for a whole pack it
  is the pack's honest spend.
* :func:`settle_self_count` — the body contains its own token count (and the floor
  contains its own floor figure), so the count is the solution of a fixed point.
* :func:`longest_fitting_prefix` — how many content rows, taken in priority order, still
  fit, found by measuring real candidate bodies (a gallop, then bisection), never by
  adding up per-row estimates.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from graphsvc.core.canonical import canonical_json

__all__ = ["CHARS_PER_TOKEN", "longest_fitting_prefix", "settle_self_count", "token_cost", "tokens_for_chars"]

CHARS_PER_TOKEN = 4


def tokens_for_chars(chars: int) -> int:
    """ceil(chars / 4): the SPEC's token estimate for a text of ``chars`` characters."""
    return math.ceil(chars / CHARS_PER_TOKEN)


def token_cost(value: Any) -> int:
    """Tokens of a value's canonical JSON (compact, sorted nested keys, ``ensure_ascii=False``).

    The ONE cost rule: a row, an id and a whole pack are all measured with it; for a pack
    it is exactly ``ceil(len(body) / 4)`` of the body the surfaces send.
    """
    return tokens_for_chars(len(canonical_json(value)))


def settle_self_count(fixed_chars: int, occurrences: int = 1) -> int:
    """The least n with ``n == ceil((fixed_chars + occurrences * len(str(n))) / 4)``.

    A body of ``fixed_chars`` characters plus ``occurrences`` copies of the decimal number
    n costs n tokens exactly when n solves that equation. Solutions can be two (a body of
    35 fixed chars is honest both as 9 tokens / 36 chars and as 10 tokens / 37 chars); the
    tie rule is the LEAST one, so the answer is unique and deterministic.

    Why this terminates and returns the least solution: let h(d) be the digit count of
    ceil((fixed_chars + occurrences * d) / 4). Solutions correspond one to one to digit
    counts d with h(d) == d (n = ceil(...) for that d), and n grows with d. h never
    decreases as d grows, so iterating d = 1, h(1), h(h(1)), ... never decreases and never
    passes any fixed point (d <= d* implies h(d) <= h(d*) = d*). It is bounded because h
    grows only logarithmically, so it stops, at the least fixed point, after a handful of
    steps.
    """
    if fixed_chars < 0 or occurrences < 0:
        raise ValueError(f"fixed_chars and occurrences must be >= 0, got {fixed_chars}, {occurrences}")
    digits = 1
    while True:
        count = tokens_for_chars(fixed_chars + occurrences * digits)
        if len(str(count)) == digits:
            return count
        digits = len(str(count))


def longest_fitting_prefix(available: int, fits: Callable[[int], bool], guess: int | None = None) -> int:
    """The largest k in [0, available] with ``fits(k)``; ``fits(0)`` is taken as true.

    ``fits`` must be monotone (true up to some k, false after): it is for pack bodies, since
    every content row adds far more characters than the ``trimmed_by_budget`` digits can
    lose. The result is exactly what a row-by-row fill would keep.

    Without a guess, the first probe is everything (the common case: the whole pack fits, one
    measurement); otherwise probing 1, 2, 4, ... then bisecting keeps every further body within
    about twice the size of the answer: O(log k) measurements instead of one per row.

    With a ``guess`` (an estimate of the answer), the search gallops from it, up or down, then
    bisects: an exact guess costs two measurements, a wrong one O(log |error|) more. The guess
    only decides where to look, never the answer.
    """
    if available == 0:
        return 0
    if guess is None:
        if fits(available):
            return available
        good, probe = 0, 1
        while probe < available and fits(probe):
            good, probe = probe, probe * 2
        bad = min(probe, available)
    else:
        guess = min(max(guess, 0), available)
        if guess == 0 or fits(guess):
            if guess == available:
                return available
            good, bad = _gallop_up(guess, available, fits)
        else:
            good, bad = _gallop_down(guess, fits)
    while bad - good > 1:
        middle = (good + bad) // 2
        if fits(middle):
            good = middle
        else:
            bad = middle
    return good


def _gallop_up(good: int, available: int, fits: Callable[[int], bool]) -> tuple[int, int]:
    """From a k that fits, probe good+1, good+2, good+4, ... up to the first that does not
    (``available + 1`` stands for "past the end": everything fits)."""
    step = 1
    while True:
        probe = min(good + step, available)
        if not fits(probe):
            return good, probe
        if probe == available:
            return available, available + 1
        good, step = probe, step * 2


def _gallop_down(bad: int, fits: Callable[[int], bool]) -> tuple[int, int]:
    """From a k that does not fit, probe bad-1, bad-2, bad-4, ... down to the first that fits."""
    step = 1
    while True:
        probe = max(bad - step, 0)
        if probe == 0 or fits(probe):
            return probe, bad
        bad, step = probe, step * 2
