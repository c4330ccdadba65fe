"""SPEC §13's ETag (a hash of the canonical body without `as_of`), RFC 9110's If-None-Match test, and
which changed projects concern a watcher (SPEC §2's fence rules). Plain data."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from graphsvc.access import covers
import hashlib

from graphsvc.core.canonical import canonical_json
from graphsvc.core.etag import body_and_etag, etag_of, none_match
from graphsvc.core.watch_scope import WatchScope

PACK = {"advisory": "ADVISORY_NOT_AUTHORITY", "as_of": "2026-12-06T10:00:00Z", "ready": {"state": "nothing_ready"},
        "budget": {"used_tokens": 40}}


def test_the_etag_is_strong_quoted_and_ignores_only_the_clock():
    tag = etag_of(PACK)
    assert tag.startswith('"') and tag.endswith('"') and not tag.startswith("W/") and len(tag) == 34
    assert etag_of({**PACK, "as_of": "2027-01-01T00:00:00Z"}) == tag
    assert etag_of({**PACK, "budget": {"used_tokens": 41}}) != tag
    assert etag_of({**PACK, "ready": {"state": "next_action"}}) != tag
    assert etag_of({key: value for key, value in PACK.items() if key != "budget"}) != tag


@given(st.dictionaries(st.sampled_from(["a", "b", "ready", "as_of"]), st.integers() | st.text(max_size=5)),
       st.dictionaries(st.sampled_from(["a", "b", "ready", "as_of"]), st.integers() | st.text(max_size=5)))
def test_two_bodies_share_an_etag_exactly_when_they_agree_outside_as_of(one, other):
    same = {k: v for k, v in one.items() if k != "as_of"} == {k: v for k, v in other.items() if k != "as_of"}
    assert (etag_of(one) == etag_of(other)) == same


@given(st.dictionaries(st.sampled_from(["as_of", "b", "ready", "a", "é"]),
                       st.recursive(st.integers() | st.text(max_size=5) | st.none(),
                                    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner, max_size=3),
                                    max_leaves=8)))
def test_the_body_and_its_etag_come_from_one_encoding_as_from_two(body):
    # The served text is canonical_json's, and the tag is the hash of the canonical text less as_of.
    text, tag = body_and_etag(body)
    assert text == canonical_json(body)
    less_clock = canonical_json({key: value for key, value in body.items() if key != "as_of"})
    assert tag == '"' + hashlib.sha256(less_clock.encode("utf-8")).hexdigest()[:32] + '"' == etag_of(body)


def test_if_none_match_follows_rfc_9110():
    tag = etag_of(PACK)
    assert none_match(tag, tag)
    assert none_match("W/" + tag, tag)  # weak comparison: the weakness indicator is ignored
    assert none_match(f'"other", {tag}', tag) and none_match(f'"other",W/{tag}', tag)
    assert none_match("*", tag) and none_match("  * ", tag)
    assert not none_match(None, tag) and not none_match("", tag) and not none_match('"other"', tag)
    assert not none_match(tag[1:-1], tag)  # an unquoted opaque-tag is not an entity-tag
    assert not none_match(f'"x,{tag[1:]}', tag)  # a comma inside a tag does not split it
    assert not none_match(f"*, {tag[:-1]}", tag)


segment = st.sampled_from(["a", "ab", "b", "shop"])
project = st.lists(segment, min_size=1, max_size=3).map("/".join)


@given(project, st.none() | project, st.none() | project, st.none() | st.lists(project, min_size=1, max_size=3))
def test_a_watcher_matches_exactly_the_projects_its_pack_reads(changed, project_id, prefix, keys):
    scope = WatchScope(project_id, prefix, tuple(keys) if keys is not None else None)
    expected = ((project_id is None or changed == project_id) and (prefix is None or covers(prefix, changed))
                and (keys is None or any(covers(key, changed) for key in keys)))
    assert scope.matches(changed) == expected
    seek = scope.seek_prefixes()
    if expected:  # the expiry seek (project_id STARTS WITH each) covers every project the watcher reads
        assert seek is None or any(changed.startswith(p) for p in seek)
