"""Rights, scopes and the key format (graphsvc.access, graphsvc.core.apikeys), on plain data."""

from __future__ import annotations

import inspect

import pytest
from hypothesis import given, strategies as st

from graphsvc.access import OPERATOR, Forbidden, Principal, covers, normal_prefixes
from graphsvc.core.apikeys import new_key, parse_key, secret_hash, secret_matches
from graphsvc.service import OPERATION_RIGHTS, GraphService

segment = st.sampled_from(["a", "ab", "b", "x", "shop"])
project = st.lists(segment, min_size=1, max_size=3).map("/".join)


def key(right: str, *prefixes: str) -> Principal:
    return Principal(key_id="0123456789ab", label="t", right=right,
                     prefixes=normal_prefixes(prefixes) if prefixes else None, caller="key:0123456789ab")


def test_the_subtree_rule_covers_itself_and_children_never_a_longer_sibling():
    assert covers("shop", "shop") and covers("shop", "shop/x") and covers("shop", "shop/x/y")
    assert not covers("shop", "shopx") and not covers("shop/x", "shop") and not covers("shop", "sho")


@given(st.lists(project, min_size=1, max_size=6), project)
def test_normal_prefixes_cover_exactly_what_the_given_ones_cover_and_are_disjoint(prefixes, probe):
    normal = normal_prefixes(prefixes)
    assert any(covers(p, probe) for p in prefixes) == any(covers(p, probe) for p in normal)
    assert sum(covers(p, probe) for p in normal) <= 1  # disjoint subtrees: a sum counts a project once
    assert list(normal) == sorted(set(normal))


def test_rights_are_ordered_and_a_refusal_names_what_the_key_may_do():
    assert key("write").allows("read") and not key("write").allows("admin") and key("admin").allows("write")
    with pytest.raises(Forbidden) as refused:
        key("read", "shop").require("write", "ingest")
    assert refused.value.status == 403 and "'write'" in refused.value.message
    assert "may read" in refused.value.message and "'shop'" in refused.value.message


def test_a_fence_inside_the_scope_narrows_one_outside_is_refused_none_means_the_scope():
    billing = key("read", "billing", "shop")
    assert billing.fence(None, None) == ("billing", "shop")
    assert billing.fence("shop/api", None) is None and billing.fence(None, "billing") is None
    for fence in ({"project_id": "shopx"}, {"project_prefix": "b"}, {"project_id": "other", "project_prefix": "shop"}):
        with pytest.raises(Forbidden) as refused:
            billing.fence(fence.get("project_id"), fence.get("project_prefix"))
        assert "'billing', 'shop'" in refused.value.message
    assert OPERATOR.fence(None, None) is None and OPERATOR.fence("x", None) is None


def test_a_write_outside_the_scope_is_refused_naming_the_field():
    with pytest.raises(Forbidden) as refused:
        key("write", "shop").check_write("shopx", "items[2].project_id")
    assert refused.value.field == "items[2].project_id"
    key("write", "shop").check_write("shop/api", "project_id")


def test_a_key_parses_and_only_its_own_secret_matches():
    fresh = new_key()
    key_id, secret = parse_key(fresh["key"])
    assert key_id == fresh["id"] and fresh["key"].startswith("gsk_")
    assert secret not in fresh["secret_hash"] and secret_matches(fresh["secret_hash"], fresh["salt"], secret)
    assert not secret_matches(fresh["secret_hash"], fresh["salt"], secret[:-1] + ("0" if secret[-1] != "0" else "1"))
    assert secret_hash(fresh["salt"], secret) != secret_hash(new_key()["salt"], secret)  # salted
    for bad in ["", "gsk_", fresh["key"] + "0", fresh["key"].upper(), "gsk_0123_" + secret, fresh["key"][4:],
                b"\xff\xfe"]:
        assert parse_key(bad) is None


#: Service methods that surfaces call but that are not operations on the store's data.
INFRASTRUCTURE = {"close", "warm", "ensure_schema", "ready", "request_bound",
                  # the background start-up (graphsvc.surfaces.http.app): plumbing, not operations
                  "START_UP_RETRY", "start_in_background", "stop_start_up", "wait_started", "waiting_for"}


def test_every_public_service_method_declares_the_right_it_needs():
    """Enforcement lives in one place: a new operation that forgets to declare its right fails here."""
    public = {name for name, _ in inspect.getmembers(GraphService) if not name.startswith("_")}
    undeclared = public - INFRASTRUCTURE - set(OPERATION_RIGHTS)
    assert not undeclared, f"declare these with @operation(right): {sorted(undeclared)}"
    assert OPERATION_RIGHTS["bootstrap"] == "read" and OPERATION_RIGHTS["ingest"] == "write"
    assert {OPERATION_RIGHTS[name] for name in ("export_lines", "import_lines", "import_file", "keys_create",
                                                "keys_list", "keys_revoke")} == {"admin"}
    assert {OPERATION_RIGHTS[name] for name in ("retrieve", "digest", "aliases")} == {"read"}
    assert {OPERATION_RIGHTS[name] for name in ("alias", "session_start", "session_finish")} == {"write"}
