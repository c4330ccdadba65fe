"""How `tokens` stores a folded token Lucene would index in pieces (graphsvc.store.maintain.stored_token)."""

from __future__ import annotations

from hypothesis import given, strategies as st

from graphsvc.store.maintain import LUCENE_TERM_UNITS, TOKEN_MARK, folded_tokens, stored_token


def units(text: str) -> int:
    return len(text.encode("utf-16-le")) // 2


def lucene_pieces(text: str) -> list[str]:
    """The terms Lucene's whitespace tokenizer makes of whitespace-free text: a term ends once it
    holds 255 UTF-16 units or more (CharTokenizer checks after appending a whole code point)."""
    pieces, piece, used = [], "", 0
    for char in text:
        piece, used = piece + char, used + units(char)
        if used >= LUCENE_TERM_UNITS:
            pieces.append(piece)
            piece, used = "", 0
    return pieces + ([piece] if piece else [])


# Letters and digits of one, two (é after folding stays one) and astral (two-unit) widths.
ALNUM = st.sampled_from(["a", "z", "7", "é", "中", "\U0001d49c", "\U00010428"])
TOKENS = st.lists(ALNUM, min_size=1, max_size=700).map("".join)


@given(TOKENS)
def test_a_token_lucene_keeps_whole_is_stored_as_it_is(token):
    if units(token) <= LUCENE_TERM_UNITS:
        assert stored_token(token) == token and lucene_pieces(token) == [token]


@given(TOKENS)
def test_every_piece_of_a_longer_token_holds_the_mark_so_it_equals_no_folded_token(token):
    stored = stored_token(token)
    if units(token) > LUCENE_TERM_UNITS:
        assert all(TOKEN_MARK in piece for piece in lucene_pieces(stored)), lucene_pieces(stored)
        assert stored.replace(TOKEN_MARK, "") == token  # nothing lost: distinct tokens stay distinct


@given(TOKENS, TOKENS)
def test_the_stored_form_is_injective(first, second):
    assert (stored_token(first) == stored_token(second)) == (first == second)


def test_the_capsule_that_once_covered_bug_by_a_piece_holds_no_bug_token():
    stored = folded_tokens("", "a real " + "a" * 255 + "bug")
    assert "bug" not in stored and "real" in stored
    assert stored_token("a" * 255 + "bug") in stored
    assert lucene_pieces(stored_token("a" * 255 + "bug")) == ["a" * 200 + "~" + "a" * 54, "abug~"]
