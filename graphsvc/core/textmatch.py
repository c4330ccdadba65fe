"""Term matching for advisory ranking: text → comparable tokens.

Ranking must be deterministic and must never interpret intent, so matching is
deliberately dumb: raw tokens, no stemming, no synonyms, no aliases. The only
normalisation is the one a reader would not notice: case and Latin diacritics
("Café" matches "cafe") and Unicode compatibility forms ("ﬁ" matches "fi").
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Sequence

__all__ = [
    "covered_terms",
    "covered_tokens",
    "term_token_sets",
    "text_tokens",
    "tokenize",
]

# Runs of Unicode letters and digits: ``\w`` minus the underscore.
_ALNUM_RUN = re.compile(r"[^\W_]+")


def _fold(text: str) -> str:
    """Decompose (NFKD), case-fold, decompose again and drop combining marks.

    ``casefold`` rather than ``lower`` so that caseless forms agree
    ("STRASSE" and "straße" both become "strasse"). The first NFKD turns
    compatibility capitals ("ℌ") into letters case folding knows; the second
    decomposes what case folding produced ("İ" → "i" + dot), so folding a
    token again never changes it.
    """
    if text.isascii():  # the common case: NFKD and casefold are lower() on ASCII
        return text.lower()
    compatible = unicodedata.normalize("NFKD", text).casefold()
    decomposed = unicodedata.normalize("NFKD", compatible)
    return "".join(char for char in decomposed if not unicodedata.combining(char))


def tokenize(text: str) -> list[str]:
    """Split text into lowercase alphanumeric tokens, in order, repeats kept."""
    return _ALNUM_RUN.findall(_fold(text))


def text_tokens(*texts: str) -> frozenset[str]:
    """The set of tokens across several texts (e.g. a capsule's headline and content).

    Texts are tokenized separately so that no token spans two of them.
    """
    tokens: set[str] = set()
    for text in texts:
        tokens.update(tokenize(text))
    return frozenset(tokens)


def term_token_sets(terms: Sequence[str]) -> list[frozenset[str]]:
    """One token set per term, in order of first appearance, each set once.

    A term without any alphanumeric token ("--", "   ") is dropped: it matches
    nothing, and advisory ranking never rejects a request for it.
    """
    seen: set[frozenset[str]] = set()
    token_sets: list[frozenset[str]] = []
    for term in terms:
        tokens = frozenset(tokenize(term))
        if tokens and tokens not in seen:
            seen.add(tokens)
            token_sets.append(tokens)
    return token_sets


def covered_tokens(term_sets: Iterable[frozenset[str]], capsule_tokens: frozenset[str]) -> int:
    """How many of the request's DISTINCT term tokens occur in the capsule (§4 coverage).

    Coverage is this count divided by the number of distinct term tokens; the
    denominator is the same for every capsule of one request, so ranking
    compares the integer count and never has to touch a float.
    """
    distinct = frozenset().union(*term_sets)
    return len(distinct & capsule_tokens)


def covered_terms(term_sets: Iterable[frozenset[str]], capsule_tokens: frozenset[str]) -> int:
    """How many terms have ALL their tokens in the capsule (phrase-level coverage).

    The first ranking key (issue #4: a term counts only when all its tokens
    occur); :func:`covered_tokens` breaks ties between equal counts.
    """
    return sum(1 for tokens in term_sets if tokens <= capsule_tokens)
