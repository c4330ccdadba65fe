"""Request validation (graphsvc.models via graphsvc.validation.parse): the field named and the rule given."""

from __future__ import annotations

import pytest

from graphsvc.errors import BadRequest, InvalidInput
from graphsvc.models import BootstrapRequest, CapsuleIn, CapsuleUpdate, IngestBatch, ListRequest
from graphsvc.validation import parse

LONE = "p\ud800"  # what json.loads gives for "p\\ud800": a str Python holds but UTF-8 cannot encode

SURROGATE_RULE = "must be valid Unicode text (no lone surrogates)"


@pytest.mark.parametrize(
    ("model", "data", "field"),
    [
        (CapsuleIn, {"project_id": LONE, "kind": "fact", "content": "x"}, "project_id"),
        (CapsuleIn, {"project_id": "p", "kind": "fact", "content": "x", "headline": LONE}, "headline"),
        (CapsuleIn, {"project_id": "p", "kind": "fact", "content": LONE}, "content"),
        (CapsuleUpdate, {"headline": LONE}, "headline"),
        (BootstrapRequest, {"project_id": LONE}, "project_id"),
        (BootstrapRequest, {"project_prefix": LONE}, "project_prefix"),
        (BootstrapRequest, {"project_prefix": LONE + "/"}, "project_prefix"),  # its message would quote the value
        (BootstrapRequest, {"terms": ["ok", LONE]}, "terms[1]"),
        (ListRequest, {"project_prefix": LONE}, "project_prefix"),
    ],
)
def test_lone_surrogates_are_refused_naming_the_field(model, data, field):
    with pytest.raises((BadRequest, InvalidInput)) as caught:
        parse(model, data, InvalidInput)
    assert caught.value.field == field
    assert SURROGATE_RULE in caught.value.message
    assert caught.value.message.encode("utf-8")  # the error itself must be sendable


def test_valid_non_ascii_text_still_passes():
    item = parse(CapsuleIn, {"project_id": "équipe/日本", "kind": "fact", "content": "😀 ok", "headline": "Café"},
                 InvalidInput)
    assert (item.project_id, item.headline) == ("équipe/日本", "Café")
    assert parse(BootstrapRequest, {"terms": ["😀", "naïve"]}, BadRequest).terms == ["😀", "naïve"]


def test_batch_errors_carry_the_item_index():
    with pytest.raises(InvalidInput) as caught:
        parse(IngestBatch, {"items": [{"project_id": "p", "kind": "fact", "content": "x"},
                                      {"project_id": LONE, "kind": "fact", "content": "x"}]}, InvalidInput)
    assert caught.value.field == "items[1].project_id"


@pytest.mark.parametrize(
    ("extra", "field", "rule"),
    [
        ({"status": "open"}, "items[0].status", "status is only for task and epic capsules, not kind 'fact'"),
        ({"blocks": ["cap-1"]}, "items[0].blocks", "kind 'fact' cannot block or be blocked"),
        ({"blocked_by": ["cap-1"]}, "items[0].blocked_by", "kind 'fact' cannot block or be blocked"),
    ],
)
def test_kind_rules_name_the_offending_field(extra, field, rule):
    with pytest.raises(InvalidInput) as caught:
        parse(IngestBatch, {"items": [{"project_id": "p", "kind": "fact", "content": "x", **extra}]}, InvalidInput)
    assert caught.value.field == field
    assert rule in caught.value.message


def test_a_bad_kind_is_reported_once_not_again_as_a_kind_rule():
    with pytest.raises(InvalidInput) as caught:
        parse(CapsuleIn, {"project_id": "p", "kind": "note", "content": "x", "status": "open"}, InvalidInput)
    assert [d["field"] for d in caught.value.details] == ["kind"]


def test_tasks_default_to_open_and_keep_their_edges_and_headline_is_derived():
    item = parse(CapsuleIn, {"project_id": "p", "kind": "task", "content": "\n  Ship it \nnow",
                             "blocks": ["cap-1"], "blocked_by": ["cap-2"]}, InvalidInput)
    assert (item.status, item.blocks, item.blocked_by, item.headline) == ("open", ["cap-1"], ["cap-2"], "Ship it")
    fact = parse(CapsuleIn, {"project_id": "p", "kind": "fact", "content": "x"}, InvalidInput)
    assert fact.status is None
    epic = parse(CapsuleIn, {"project_id": "p", "kind": "epic", "content": "x", "status": "done"}, InvalidInput)
    assert epic.status == "done"


@pytest.mark.parametrize("value", [
    "2026-01-01T00:00:00.000000000Z\n",  # `$` would match before the newline
    "2026-01-01T00:00:00.\u0661\u0662\u0663\u0664\u0665\u0666\u0667\u0668\u0669Z",  # `\d` would take Arabic-Indic digits
    "2026-02-30T00:00:00.000000000Z",  # the format, but no such day
])
def test_an_imported_instant_must_be_exactly_what_export_writes(value):
    # Anything else reached Neo4j's datetime() and came back as a 500 instead of a 422 naming the field.
    from graphsvc.store.transfer import check_instant

    with pytest.raises(ValueError):
        check_instant(value)
    assert check_instant("2026-01-01T00:00:00.123456789Z") == "2026-01-01T00:00:00.123456789Z"


@pytest.mark.parametrize(
    ("model", "data", "field"),
    [
        (CapsuleIn, {"project_id": "p", "kind": "fact", "content": "x", "\ud800": 1}, "\\ud800"),
        (IngestBatch, {"items": [{"project_id": "p", "kind": "fact", "content": "x"},
                                 {"project_id": "p", "kind": "fact", "content": "x", "a\udc00b": 1}]},
         "items[1].a\\udc00b"),
        (CapsuleUpdate, {"\udfff": "done"}, "\\udfff"),
        (CapsuleUpdate, {"é\ud800": "done"}, "é\\ud800"),  # only the surrogate is escaped
    ],
)
def test_a_field_name_that_is_a_lone_surrogate_is_named_escaped(model, data, field):
    # pydantic reports such a key with an empty location; the error must still say which key.
    with pytest.raises(InvalidInput) as caught:
        parse(model, data, InvalidInput)
    assert caught.value.field == field
    assert "field names must be valid Unicode text (no lone surrogates)" in caught.value.message
    assert caught.value.message.encode("utf-8") and caught.value.field.encode("utf-8")
