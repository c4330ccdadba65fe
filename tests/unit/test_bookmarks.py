"""The bookmark token (graphsvc.store.bookmarks): opaque, header-safe, round-trips, refuses forgeries."""

from __future__ import annotations

import pytest
from neo4j import Bookmarks

from graphsvc.errors import BadRequest
from graphsvc.store import bookmarks


def test_a_token_round_trips_every_raw_bookmark_in_one_header_safe_value():
    raw = {"FB:kcwQC7oDZL3YR9CfMdann/0WcgaQ", "FB:other+value=="}
    token = bookmarks.encode(Bookmarks.from_raw_values(raw))
    assert token.startswith("v1.") and all(c.isalnum() or c in "-_." for c in token)
    assert bookmarks.decode(token).raw_values == frozenset(raw)
    assert token == bookmarks.encode(Bookmarks.from_raw_values(sorted(raw, reverse=True)))  # order-free


@pytest.mark.parametrize("token", ["", "FB:raw", "v1.", "v1.%%%", "v1.eyJhIjoxfQ", "v1.WzFd", "v1.WyIiXQ",
                                   "v1." + "A" * 5000])
def test_anything_else_is_a_bad_request_naming_the_field(token):
    with pytest.raises(BadRequest) as caught:
        bookmarks.decode(token, field="Graphsvc-Bookmark")
    assert caught.value.field == "Graphsvc-Bookmark"


def test_an_exchange_waits_for_the_callers_bookmark_then_chains_on_its_own_writes():
    assert bookmarks.session_bookmarks() is None  # outside a request: the driver's defaults
    sent = Bookmarks.from_raw_values(["FB:sent"])
    with bookmarks.exchange(sent) as current:
        assert bookmarks.session_bookmarks() == sent
        bookmarks.record_write(Bookmarks())  # a write that committed nothing changes nothing
        assert current.written is None
        bookmarks.record_write(Bookmarks.from_raw_values(["FB:mine"]))
        assert bookmarks.session_bookmarks().raw_values == {"FB:mine"}
    assert bookmarks.session_bookmarks() is None
