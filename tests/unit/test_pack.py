"""memory_bootstrap pack assembly: sections, caps, budget contract, determinism."""

from __future__ import annotations

import json
import math
import random
from dataclasses import replace
from datetime import datetime, timedelta, timezone
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from graphsvc.core.budget import token_cost
from graphsvc.core.candidates import Candidate
from graphsvc.core.canonical import canonical_json
from graphsvc.core.pack import (
    ADVISORY,
    MIN_ROW_CHARS,
    NOTICE,
    PackInputs,
    PackRequest,
    assemble_pack,
    capsule_row,
    constraint_row_floor,
    constraint_rows_likely,
    constraint_rows_needed,
    constraint_run_complete,
    excerpt,
    trap_row,
)
from graphsvc.core.ranking import rank
from graphsvc.core.textmatch import term_token_sets, tokenize

NOW = datetime(2026, 12, 2, 14, 0, tzinfo=timezone.utc)
HUGE = 10**9
SECTION_ORDER = [
    "advisory", "notice", "as_of", "scope",
    "constraints", "constraints_total",
    "ready", "ready_total",
    "decisions", "decisions_total",
    "traps", "traps_total",
    "handles", "budget",
]  # fmt: skip
ALWAYS = [
    "advisory", "notice", "as_of",
    "constraints_total", "ready_total", "decisions_total", "traps_total", "budget",
]  # fmt: skip (+ "scope" when the request has a fence)


def cap(
    number: int,
    headline: str = "",
    content: str = "",
    *,
    days_old: float = 0.0,
    project: str = "proj",
    tier: str = "active",
    superseded: bool = False,
) -> Candidate:
    headline = headline or f"capsule {number}"
    return Candidate(
        id=f"cap-{number}",
        project_id=project,
        headline=headline,
        content=content or headline,
        updated_at=NOW - timedelta(days=days_old),
        tier=tier,
        superseded=superseded,
    )


def inputs(
    constraints: list[Candidate] = (),  # type: ignore[assignment]
    ready: list[Candidate] = (),  # type: ignore[assignment]
    decisions: list[Candidate] = (),  # type: ignore[assignment]
    traps: list[Candidate] = (),  # type: ignore[assignment]
    cycle: list[str] | None = None,
) -> PackInputs:
    return PackInputs(
        constraints=list(constraints),
        constraints_total=len(constraints),
        ready=list(ready),
        ready_total=len(ready),
        cycle=cycle,
        decisions=list(decisions),
        decisions_total=len(decisions),
        traps=list(traps),
        traps_total=len(traps),
    )


def request(budget: int = 1500, terms: tuple[str, ...] = (), **scope: str) -> PackRequest:
    return PackRequest(
        terms=terms,
        project_id=scope.get("project_id"),
        project_prefix=scope.get("project_prefix"),
        token_budget=budget,
    )


def section_ids(pack: dict[str, Any], section: str) -> list[str]:
    return [row["id"] for row in pack.get(section, [])]


def ready_ids(pack: dict[str, Any]) -> list[str]:
    return [row["id"] for row in pack["ready"].get("ready", [])]


# ---------------------------------------------------------------- independent recomputation


def head_of(ready: dict[str, Any]) -> Any:
    """The ready head as returned: the section without its rows (state + next_action / cycle / message)."""
    return {key: value for key, value in ready.items() if key != "ready"}


def surfaced_ids(pack: dict[str, Any]) -> list[str]:
    ready = pack.get("ready", {})
    found = section_ids(pack, "constraints")
    found += [ready["next_action"]["id"]] if "next_action" in ready else []
    found += [row["id"] for row in ready.get("ready", [])] + list(ready.get("cycle", []))
    return found + section_ids(pack, "decisions") + section_ids(pack, "traps")


def body_chars(pack: dict[str, Any]) -> int:
    """Characters of the compact JSON body (plain json.dumps: the length does not depend on key order)."""
    return len(json.dumps(pack, separators=(",", ":"), ensure_ascii=False))


def honest_cost(pack: dict[str, Any]) -> int:
    """What the pack as returned costs: ceil(characters of its body / 4), independently of the core."""
    return math.ceil(body_chars(pack) / 4)


def settled(pack: dict[str, Any]) -> dict[str, Any]:
    """Give the pack the least used_tokens that is honest about the body containing it (brute force)."""
    pack["budget"]["used_tokens"] = 0
    used = honest_cost(pack)  # no honest count is smaller: its digits only lengthen the body
    while True:
        pack["budget"]["used_tokens"] = used
        if honest_cost(pack) == used:
            return pack
        used += 1


def content_rows_in_fill_order(pack: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """Rows after the floors, in fill order, with their section: constraints[1:], ready, decisions, traps."""
    return (
        [("constraints", row) for row in pack.get("constraints", [])[1:]]
        + [("ready", row) for row in pack.get("ready", {}).get("ready", [])]
        + [("decisions", row) for row in pack.get("decisions", [])]
        + [("traps", row) for row in pack.get("traps", [])]
    )


def rebuilt(full: dict[str, Any], kept: int, budget: int) -> dict[str, Any]:
    """The pack SPEC §4 says a budget keeping the floors and ``kept`` content rows returns.

    Rebuilt from the untrimmed pack with plain dict work (no core code): the floors, the first
    ``kept`` rows in fill order, the handles they surface, the trimmed count, and the least
    honest used_tokens for that very body.
    """
    order = content_rows_in_fill_order(full)
    chosen = order[:kept]

    def rows(section: str) -> list[dict[str, Any]]:
        return [row for name, row in chosen if name == section]

    pack: dict[str, Any] = {}
    for key in SECTION_ORDER:
        if key == "constraints":
            value = full.get("constraints", [])[:1] + rows("constraints")
            if value:
                pack[key] = value
        elif key == "ready":
            section = head_of(full["ready"])
            if rows("ready"):
                section["ready"] = rows("ready")
            pack[key] = section
        elif key in ("decisions", "traps"):
            if rows(key):
                pack[key] = rows(key)
        elif key == "handles":
            if surfaced_ids(pack):
                pack[key] = list(dict.fromkeys(surfaced_ids(pack)))
        elif key == "budget":
            pack[key] = {"floor_tokens": full["budget"]["floor_tokens"], "token_budget": budget,
                         "trimmed_by_budget": len(order) - kept, "used_tokens": 0}  # fmt: skip
        elif key in full:
            pack[key] = full[key]
    return settled(pack)


def capsule_row_count(pack: dict[str, Any]) -> int:
    ready = pack.get("ready", {})
    return (
        len(pack.get("constraints", []))
        + ("next_action" in ready)
        + len(ready.get("ready", []))
        + len(pack.get("decisions", []))
        + len(pack.get("traps", []))
    )


# ---------------------------------------------------------------- examples


def test_full_pack_has_exact_shape_and_orders() -> None:
    pack = assemble_pack(
        inputs(
            constraints=[cap(4, "no force push", days_old=10), cap(2, "Keep API stable", "Keep API\n  stable  always")],
            ready=[cap(11, "write docs", days_old=3), cap(12, "ship it", days_old=1), cap(10, "plan", days_old=3)],
            decisions=[cap(20, "use neo4j", days_old=100), cap(21, "use starlette", days_old=1)],
            traps=[cap(30, "driver leaks", tier="stale", superseded=True)],
        ),
        request(project_prefix="proj"),
        NOW,
    )
    assert pack == {
        "advisory": "ADVISORY_NOT_AUTHORITY",
        "notice": NOTICE,
        "as_of": "2026-12-02T14:00:00Z",
        "scope": {"project_prefix": "proj"},
        "constraints": [
            {"excerpt": "always", "headline": "Keep API stable", "id": "cap-2", "project_id": "proj"},
            {"headline": "no force push", "id": "cap-4", "project_id": "proj"},
        ],
        "constraints_total": 2,
        "ready": {
            "next_action": {"headline": "ship it", "id": "cap-12", "project_id": "proj"},
            "ready": [
                {"headline": "plan", "id": "cap-10", "project_id": "proj"},
                {"headline": "write docs", "id": "cap-11", "project_id": "proj"},
            ],
            "state": "next_action",
        },
        "ready_total": 3,
        "decisions": [
            {"headline": "use starlette", "id": "cap-21", "project_id": "proj"},
            {"headline": "use neo4j", "id": "cap-20", "project_id": "proj"},
        ],
        "decisions_total": 2,
        "traps": [
            {"headline": "driver leaks", "id": "cap-30", "project_id": "proj", "superseded": True, "tier": "stale"},
        ],
        "traps_total": 1,
        "handles": ["cap-2", "cap-4", "cap-12", "cap-10", "cap-11", "cap-21", "cap-20", "cap-30"],
        "budget": {
            "floor_tokens": pack["budget"]["floor_tokens"],
            "token_budget": 1500,
            "trimmed_by_budget": 0,
            "used_tokens": pack["budget"]["used_tokens"],
        },
    }
    assert list(pack) == [key for key in SECTION_ORDER]
    # the whole body is charged, envelope and budget object included
    body = canonical_json(pack)
    assert body == json.dumps(pack, separators=(",", ":"), ensure_ascii=False)  # nested keys already sorted
    assert pack["budget"]["used_tokens"] == math.ceil(len(body) / 4) == token_cost(pack)
    assert_floor_is_the_floor_pack_cost(pack)
    floor_pack = rebuilt(pack, 0, pack["budget"]["floor_tokens"])
    assert set(floor_pack) == set(ALWAYS) | {"scope", "constraints", "ready", "handles"}
    assert floor_pack["constraints"] == pack["constraints"][:1] and floor_pack["handles"] == ["cap-2", "cap-12"]


def assert_floor_is_the_floor_pack_cost(full: dict[str, Any]) -> None:
    """floor_tokens is the budget at which the floor pack (floors only, every later row trimmed) costs exactly it."""
    floor = full["budget"]["floor_tokens"]
    assert rebuilt(full, 0, floor)["budget"]["used_tokens"] == floor


def test_the_envelope_is_small_and_its_minimum_cost_is_known() -> None:
    """docs/pack.md: the bare envelope (no fence, budget 0, one-digit totals) costs 70 tokens, 279 characters."""
    pack = assemble_pack(inputs(), request(budget=0), NOW)
    assert list(pack) == ALWAYS
    assert pack["budget"]["used_tokens"] == honest_cost(pack) == 70 and body_chars(pack) == 279
    assert len(NOTICE) <= 40


def test_advisory_framing_is_always_first() -> None:
    pack = assemble_pack(inputs(), request(), NOW)
    assert list(pack)[:3] == ["advisory", "notice", "as_of"]
    assert pack["advisory"] == ADVISORY == "ADVISORY_NOT_AUTHORITY"
    assert "data" in NOTICE and "not instructions" in NOTICE


def test_as_of_is_utc_with_z_at_second_precision() -> None:
    local = datetime(2026, 12, 2, 15, 0, 7, 999_999, tzinfo=timezone(timedelta(hours=1)))
    assert assemble_pack(inputs(), request(), local)["as_of"] == "2026-12-02T14:00:07Z"
    with pytest.raises(ValueError):
        assemble_pack(inputs(), request(), datetime(2026, 12, 2))


def test_scope_echoes_only_the_given_fences() -> None:
    assert "scope" not in assemble_pack(inputs(), request(), NOW)  # no fence: the whole store, nothing to pay for
    assert assemble_pack(inputs(), request(project_id="a/b"), NOW)["scope"] == {"project_id": "a/b"}
    both = assemble_pack(inputs(), request(project_id="a/b", project_prefix="a"), NOW)["scope"]
    assert both == {"project_id": "a/b", "project_prefix": "a"}


def test_empty_store_says_nothing_is_ready_and_omits_empty_lists() -> None:
    pack = assemble_pack(inputs(), request(), NOW)
    assert list(pack) == ALWAYS[:4] + ["ready"] + ALWAYS[4:]
    assert pack["ready"]["state"] == "nothing_ready"
    assert set(pack["ready"]) == {"state", "message"}
    assert "nothing is ready" in pack["ready"]["message"].lower()
    assert pack["ready_total"] == 0
    assert pack["budget"]["used_tokens"] == honest_cost(pack)
    # the nothing-ready marker is a floor: the envelope and it are all there is
    assert pack == rebuilt(pack, 0, 1500)
    assert_floor_is_the_floor_pack_cost(pack)


def test_cycle_replaces_the_ready_answer_and_fails_closed() -> None:
    pack = assemble_pack(
        inputs(constraints=[cap(1)], ready=[cap(5)], traps=[cap(9)], cycle=["cap-3", "cap-7", "cap-4"]),
        request(),
        NOW,
    )
    ready = pack["ready"]
    assert set(ready) == {"state", "cycle", "message"}
    assert ready["state"] == "cycle"
    assert ready["cycle"] == ["cap-3", "cap-7", "cap-4"]
    assert "remove a BLOCKS edge" in ready["message"] and "done" in ready["message"]
    assert pack["ready_total"] == 1  # SPEC §3: the exact count; failing closed hides the rows, not the count
    assert pack["handles"] == ["cap-1", "cap-3", "cap-7", "cap-4", "cap-9"]
    assert pack["budget"]["used_tokens"] == honest_cost(pack)
    # the floor is the envelope, the first constraint and the whole cycle head (state, ids, repair
    # message) with their handles: the trap is the one content row
    assert_floor_is_the_floor_pack_cost(pack)
    floor_pack = rebuilt(pack, 0, pack["budget"]["floor_tokens"])
    assert floor_pack["ready"] == ready and "traps" not in floor_pack
    assert floor_pack["handles"] == ["cap-1", "cap-3", "cap-7", "cap-4"]
    assert floor_pack["budget"]["trimmed_by_budget"] == 1


def test_excerpt_collapses_whitespace_and_truncates_to_240() -> None:
    assert excerpt("  a\n\n b\t\tc  ") == "a b c"
    assert excerpt("x" * 240) == "x" * 240
    long = excerpt("word " * 100)
    assert len(long) == 240 and long.endswith("…") and long[:239] == ("word " * 100)[:239]


def test_excerpt_is_omitted_when_it_repeats_the_headline() -> None:
    assert "excerpt" not in capsule_row(cap(1, "Same line", "  Same   line "))
    assert capsule_row(cap(1, "Title", "Title\nbody"))["excerpt"] == "body"
    # only a whole-word opening is dropped: "Titles" does not start with the headline "Title"
    assert capsule_row(cap(1, "Title", "Titles\nbody"))["excerpt"] == "Titles body"
    assert capsule_row(cap(1, "Other", "Title\nbody"))["excerpt"] == "Title body"


def test_trap_rows_carry_tier_and_superseded_in_sorted_key_order() -> None:
    row = trap_row(cap(3, "trap", "trap details", tier="stale", superseded=True))
    assert list(row) == ["excerpt", "headline", "id", "project_id", "superseded", "tier"]
    assert (row["tier"], row["superseded"]) == ("stale", True)
    assert list(capsule_row(cap(3, "a", "b"))) == ["excerpt", "headline", "id", "project_id"]


def test_constraints_are_never_count_capped() -> None:
    constraints = [cap(n, days_old=n) for n in range(1, 26)]
    pack = assemble_pack(inputs(constraints=constraints), request(budget=HUGE), NOW)
    assert section_ids(pack, "constraints") == [f"cap-{n}" for n in range(1, 26)]
    assert pack["constraints_total"] == 25
    assert pack["budget"]["trimmed_by_budget"] == 0


def test_ready_decisions_traps_cap_at_ten_with_exact_totals() -> None:
    pack = assemble_pack(
        inputs(
            ready=[cap(n, days_old=n) for n in range(100, 115)],
            decisions=[cap(n, days_old=n) for n in range(200, 215)],
            traps=[cap(n, days_old=n) for n in range(300, 315)],
        ),
        request(budget=HUGE),
        NOW,
    )
    assert pack["ready"]["next_action"]["id"] == "cap-100"
    assert ready_ids(pack) == [f"cap-{n}" for n in range(101, 111)]
    assert section_ids(pack, "decisions") == [f"cap-{n}" for n in range(200, 210)]
    assert section_ids(pack, "traps") == [f"cap-{n}" for n in range(300, 310)]
    assert (pack["ready_total"], pack["decisions_total"], pack["traps_total"]) == (15, 15, 15)
    assert pack["budget"]["trimmed_by_budget"] == 0  # cap drops are not budget trims


def test_store_totals_are_echoed_even_when_lists_were_prelimited() -> None:
    fenced = replace(inputs(decisions=[cap(1)], traps=[cap(2)]), decisions_total=40, traps_total=12)
    pack = assemble_pack(fenced, request(), NOW)
    assert (pack["decisions_total"], pack["traps_total"]) == (40, 12)


def test_budget_trims_a_priority_prefix_without_skipping_ahead() -> None:
    big = "x" * 400
    pack_inputs = inputs(
        constraints=[cap(1, "first", days_old=0), cap(2, "second", big, days_old=1)],
        ready=[cap(10, "go", days_old=0)],
        decisions=[cap(20, "tiny", days_old=0)],
    )
    floors = assemble_pack(pack_inputs, request(budget=1), NOW)["budget"]["floor_tokens"]
    pack = assemble_pack(pack_inputs, request(budget=floors + 60), NOW)
    assert section_ids(pack, "constraints") == ["cap-1"]
    assert pack["ready"]["next_action"]["id"] == "cap-10"
    assert "decisions" not in pack  # the tiny decision would fit, but comes after the miss
    full = assemble_pack(pack_inputs, request(budget=HUGE), NOW)
    assert pack == rebuilt(full, 0, floors + 60)  # the floors alone, everything after them trimmed
    assert pack["budget"]["trimmed_by_budget"] == 2
    assert pack["budget"]["used_tokens"] == honest_cost(pack) <= floors + 60
    assert honest_cost(rebuilt(full, 1, floors + 60)) > floors + 60  # the big constraint really does not fit
    assert pack["handles"] == ["cap-1", "cap-10"]


def test_floors_alone_may_overshoot_a_tiny_budget() -> None:
    pack = assemble_pack(
        inputs(constraints=[cap(1), cap(2)], ready=[cap(3), cap(4)], decisions=[cap(5)]), request(budget=1), NOW
    )
    assert section_ids(pack, "constraints") == ["cap-1"]
    assert pack["ready"] == {"next_action": capsule_row(cap(3)), "state": "next_action"}
    # the sanctioned excess; "1" is two digits shorter than the floor figure, so it may cost a token less
    assert 1 < pack["budget"]["used_tokens"] == honest_cost(pack) <= pack["budget"]["floor_tokens"]
    assert pack["budget"]["trimmed_by_budget"] == 3
    assert pack["handles"] == ["cap-1", "cap-3"]


def test_zero_budget_returns_an_empty_pack_counting_would_be_rows() -> None:
    pack = assemble_pack(
        inputs(
            constraints=[cap(1), cap(2)],
            ready=[cap(n) for n in range(10, 25)],
            decisions=[cap(n) for n in range(30, 42)],
            traps=[cap(50)],
        ),
        request(budget=0, project_id="proj"),
        NOW,
    )
    assert list(pack) == ALWAYS[:3] + ["scope"] + ALWAYS[3:]
    assert pack["scope"] == {"project_id": "proj"}
    assert pack["ready_total"] == 15
    assert pack["budget"]["used_tokens"] == honest_cost(pack)  # the envelope is what it returns, and it is paid
    assert pack["budget"]["trimmed_by_budget"] == 2 + 1 + 10 + 10 + 1
    assert pack["budget"]["floor_tokens"] > pack["budget"]["used_tokens"]


def test_zero_budget_does_not_count_a_cycle_or_nothing_ready_marker() -> None:
    cyc = assemble_pack(inputs(constraints=[cap(1)], cycle=["cap-2", "cap-3"]), request(budget=0), NOW)
    assert cyc["budget"]["trimmed_by_budget"] == 1
    none = assemble_pack(inputs(), request(budget=0), NOW)
    assert none["budget"]["trimmed_by_budget"] == 0


def test_terms_rerank_sections_but_never_filter_them() -> None:
    pack_inputs = inputs(
        constraints=[cap(1, "fresh rule", days_old=0), cap(2, "Never touch the Café database", days_old=300)],
        ready=[cap(3, "fresh task", days_old=0), cap(4, "migrate cafe schema", days_old=50)],
    )
    plain = assemble_pack(pack_inputs, request(), NOW)
    ranked = assemble_pack(pack_inputs, request(terms=("CAFE", "--")), NOW)
    assert section_ids(plain, "constraints") == ["cap-1", "cap-2"]
    assert section_ids(ranked, "constraints") == ["cap-2", "cap-1"]
    assert plain["ready"]["next_action"]["id"] == "cap-3"
    assert ranked["ready"]["next_action"]["id"] == "cap-4"
    assert ready_ids(ranked) == ["cap-3"]


def test_terms_without_alphanumeric_tokens_change_nothing() -> None:
    pack_inputs = inputs(constraints=[cap(1, days_old=3), cap(2, days_old=1)], decisions=[cap(3), cap(4)])
    assert assemble_pack(pack_inputs, request(terms=("--", "!!!", " ")), NOW) == assemble_pack(
        pack_inputs, request(), NOW
    )


# ---------------------------------------------------------------- properties

WORDS = ["deploy", "neo4j", "driver", "Café", "cafe", "Straße", "pool", "東京", "retry", "—", "x" * 30]
texts = st.one_of(
    st.lists(st.sampled_from(WORDS), min_size=1, max_size=6).map(" ".join),
    st.text(min_size=1, max_size=300),
)


@st.composite
def candidate(draw: st.DrawFn, number: int) -> Candidate:
    headline = draw(texts)[:120]
    return Candidate(
        id=f"cap-{number}",
        project_id=draw(st.sampled_from(["nott", "nott/x", "proj/é"])),
        headline=headline,
        content=draw(st.one_of(st.just(headline), texts)),
        updated_at=NOW - timedelta(seconds=draw(st.sampled_from([-3600, 0, 86_400, 90 * 86_400]) | st.integers(0, 10**8))),
        tier=draw(st.sampled_from(["active", "archived", "stale"])),
        superseded=draw(st.booleans()),
    )


@st.composite
def pack_inputs(draw: st.DrawFn) -> PackInputs:
    sizes = [draw(st.integers(0, limit)) for limit in (25, 14, 14, 14)]
    cycle_size = draw(st.sampled_from([0, 0, 2, 3, 5]))
    numbers = draw(st.lists(st.integers(1, 100_000), unique=True, min_size=sum(sizes) + cycle_size,
                            max_size=sum(sizes) + cycle_size))  # fmt: skip
    sections: list[list[Candidate]] = []
    start = 0
    for size in sizes:
        sections.append([draw(candidate(n)) for n in numbers[start : start + size]])
        start += size
    constraints, ready, decisions, traps = sections
    cycle = [f"cap-{n}" for n in numbers[start:]] if cycle_size else None
    return PackInputs(
        constraints=constraints,
        constraints_total=len(constraints),
        ready=ready,
        ready_total=len(ready),
        cycle=cycle,
        decisions=decisions,
        decisions_total=len(decisions) + draw(st.integers(0, 3)),
        traps=traps,
        traps_total=len(traps) + draw(st.integers(0, 3)),
    )


requests = st.builds(
    PackRequest,
    terms=st.lists(st.one_of(st.sampled_from(WORDS + ["--", "neo4j driver"]), st.text(max_size=20)), max_size=4).map(
        tuple
    ),
    project_id=st.none() | st.just("nott/x"),
    project_prefix=st.none() | st.just("nott"),
    token_budget=st.one_of(st.just(0), st.integers(1, 120), st.integers(120, 3000)),
)


def expected_capsule_rows(data: PackInputs) -> int:
    """Capsule rows after caps, before the budget."""
    ready_rows = 0 if data.cycle is not None or not data.ready else 1 + min(10, len(data.ready) - 1)
    return len(data.constraints) + ready_rows + min(10, len(data.decisions)) + min(10, len(data.traps))


def budgets_around(full: dict[str, Any]) -> st.SearchStrategy[int]:
    """Budgets where the contract is tight: 0, at and around the floor, and across the whole fill."""
    floor, everything = full["budget"]["floor_tokens"], full["budget"]["used_tokens"]
    return st.one_of(
        st.just(0), st.just(floor), st.integers(max(1, floor - 12), floor + 12),
        st.integers(max(1, floor), everything + 8), st.integers(1, 3000),
    )  # fmt: skip


@settings(max_examples=300, deadline=None)
@given(pack_inputs(), requests, st.data())
def test_budget_contract_holds_for_generated_packs(data: PackInputs, req: PackRequest, draw: st.DataObject) -> None:
    full = assemble_pack(data, replace(req, token_budget=HUGE), NOW)
    budget = draw.draw(budgets_around(full), label="token_budget")
    pack = assemble_pack(data, replace(req, token_budget=budget), NOW)
    spent = pack["budget"]
    floor = spent["floor_tokens"]

    # sections in the fixed order; the always-present keys are there
    assert list(pack) == [key for key in SECTION_ORDER if key in pack]
    assert all(key in pack for key in ALWAYS)
    assert ("scope" in pack) == (req.project_id is not None or req.project_prefix is not None)
    for section in ("constraints", "decisions", "traps", "handles"):
        assert pack.get(section, "absent") != []  # empty lists are omitted

    # honest accounting: the canonical body, every character of it, and nothing else
    body = canonical_json(pack)
    assert spent["used_tokens"] == math.ceil(len(body) / 4) == honest_cost(pack) == token_cost(pack)
    assert json.loads(body) == pack and list(json.loads(body)) == list(pack)
    assert spent["token_budget"] == budget
    if budget >= floor:
        assert spent["used_tokens"] <= budget

    # the big-budget pack shows everything the caps allow; the floor figure does not depend on the budget
    assert full["budget"]["trimmed_by_budget"] == 0
    assert capsule_row_count(full) == expected_capsule_rows(data)
    assert len(full.get("constraints", [])) == len(data.constraints)
    assert full["budget"]["floor_tokens"] == floor
    assert_floor_is_the_floor_pack_cost(full)

    # the pack echoes the store's exact totals (a cycle hides the ready rows, not the count)
    assert pack["ready_total"] == data.ready_total
    assert (pack["decisions_total"], pack["traps_total"]) == (data.decisions_total, data.traps_total)
    assert pack["constraints_total"] == data.constraints_total

    if budget == 0:
        assert list(pack) == [key for key in SECTION_ORDER if key in ALWAYS or key == "scope" and key in pack]
        assert spent["trimmed_by_budget"] == expected_capsule_rows(data)
        return

    # floors are always present
    assert "ready" in pack and head_of(pack["ready"]) == head_of(full["ready"])
    assert pack.get("constraints", [None])[0] == full.get("constraints", [None])[0]

    # priority prefix: kept content rows are exactly a prefix of the full fill order, and the pack is
    # exactly the one rebuilt from that prefix (handles, trimmed count, honest used_tokens)
    kept = content_rows_in_fill_order(pack)
    everything = content_rows_in_fill_order(full)
    assert kept == everything[: len(kept)]
    assert spent["trimmed_by_budget"] == len(everything) - len(kept) == expected_capsule_rows(data) - capsule_row_count(pack)
    assert pack == rebuilt(full, len(kept), budget)
    # exact admission: the first trimmed row, with its handle, section brackets and budget digits, does not fit
    if len(kept) < len(everything):
        assert honest_cost(rebuilt(full, len(kept) + 1, budget)) > budget
    if budget < floor:  # the one sanctioned excess: the floors alone, never more than their figure
        assert kept == [] and spent["used_tokens"] <= floor
    if budget == floor:
        assert kept == [] and spent["used_tokens"] == floor

    # handles: exactly the surfaced ids, deduplicated, in order of appearance
    assert pack.get("handles", []) == list(dict.fromkeys(surfaced_ids(pack)))
    assert len(set(pack.get("handles", []))) == len(pack.get("handles", []))


@settings(max_examples=150, deadline=None)
@given(pack_inputs(), requests, st.randoms())
def test_packs_are_deterministic_and_independent_of_input_order(
    data: PackInputs, req: PackRequest, rng: random.Random
) -> None:
    def shuffled(items: Any) -> list[Candidate]:
        copy = list(items)
        rng.shuffle(copy)
        return copy

    reordered = replace(
        data,
        constraints=shuffled(data.constraints),
        ready=shuffled(data.ready),
        decisions=shuffled(data.decisions),
        traps=shuffled(data.traps),
    )
    first = json.dumps(assemble_pack(data, req, NOW), ensure_ascii=False)
    assert first == json.dumps(assemble_pack(data, req, NOW), ensure_ascii=False)
    assert first == json.dumps(assemble_pack(reordered, req, NOW), ensure_ascii=False)


@settings(max_examples=150, deadline=None)
@given(pack_inputs(), requests)
def test_terms_rerank_constraints_by_coverage_but_never_filter(data: PackInputs, req: PackRequest) -> None:
    with_terms = assemble_pack(data, replace(req, token_budget=HUGE), NOW)
    without = assemble_pack(data, replace(req, token_budget=HUGE, terms=()), NOW)
    everyone = sorted(c.id for c in data.constraints)
    assert sorted(section_ids(with_terms, "constraints")) == sorted(section_ids(without, "constraints")) == everyone
    term_tokens = {token for term in req.terms for token in tokenize(term)}
    whole_terms = {frozenset(tokenize(term)) for term in req.terms if tokenize(term)}
    by_id = {c.id: c for c in data.constraints}

    def coverage_of(capsule_id: str) -> tuple[int, int]:
        tokens = set(tokenize(by_id[capsule_id].headline)) | set(tokenize(by_id[capsule_id].content))
        return (sum(1 for term in whole_terms if term <= tokens), len(term_tokens & tokens))

    coverage = [coverage_of(i) for i in section_ids(with_terms, "constraints")]
    assert coverage == sorted(coverage, reverse=True)


@st.composite
def many_small_constraints(draw: st.DrawFn) -> list[Candidate]:
    """Up to 300 constraints with the shortest rows a store can hold (1-char headlines, short ids)."""
    size = draw(st.sampled_from([0, 1, 2, 20, 120, 300]))
    rows = draw(st.lists(st.tuples(st.sampled_from(["a", "b", "neo4j", "deploy pool"]), st.sampled_from(["p", "q/x"]),
                                   st.integers(-3600, 10**6)), min_size=size, max_size=size))
    return [Candidate(id=f"cap-{n}", project_id=project, headline=headline, content=headline,
                      updated_at=NOW - timedelta(seconds=age), tier="active", superseded=False)
            for n, (headline, project, age) in enumerate(rows, start=1)]


@settings(max_examples=150, deadline=None)
@given(constraints=many_small_constraints(), req=requests)
def test_constraints_past_constraint_rows_needed_never_change_the_pack(constraints: list[Candidate],
                                                                       req: PackRequest) -> None:
    # The store ships only the first constraint_rows_needed(budget) constraints in rank order
    # (constraints_total stays the full count); the pack must be byte-identical to the one built
    # from all of them.
    full = inputs(constraints=constraints)
    ranked = rank(constraints, term_token_sets(list(req.terms)), NOW)
    shipped = replace(full, constraints=ranked[:constraint_rows_needed(req.token_budget)])
    assert canonical_json(assemble_pack(shipped, req, NOW)) == canonical_json(assemble_pack(full, req, NOW))


def test_min_row_chars_is_the_shortest_constraint_row_with_its_handle() -> None:
    shortest = Candidate(id="cap-1", project_id="", headline="", content="", updated_at=NOW, tier="active",
                         superseded=False)
    assert MIN_ROW_CHARS == len("," + canonical_json(capsule_row(shortest))) + len(',"cap-1"')


@given(st.integers(1, 10**9).flatmap(candidate))
def test_a_constraint_row_adds_at_least_its_floor(c: Candidate) -> None:
    """The least cost the store trims constraints by never exceeds what the row really adds: the row
    and its comma, and its handle with its comma."""
    added = len(canonical_json(capsule_row(c))) + 1 + len(canonical_json(c.id)) + 1
    assert constraint_row_floor(c) <= added
    if c.content == c.headline and canonical_json(c.headline) == f'"{c.headline}"' and canonical_json(c.project_id) == f'"{c.project_id}"':
        assert constraint_row_floor(c) == added  # no excerpt, no escapes: exact


def shipped_constraints(ranked: list[Candidate], token_budget: int) -> int:
    """How many constraints the pack statement ships (cypher/bootstrap/sections_*.cypher): the
    first, then each while the rows after the first fit by their floors, then one more."""
    spent, fitting = 0, 0
    for c in ranked[1:]:
        spent += constraint_row_floor(c)
        if spent > 4 * token_budget:
            break
        fitting += 1
    return min(len(ranked), 2 + fitting, constraint_rows_needed(token_budget))


@settings(max_examples=200, deadline=None)
@given(constraints=many_small_constraints(), req=requests, top=st.integers(1, 120))
def test_a_constraint_run_called_complete_gives_the_pack_of_every_constraint(constraints: list[Candidate],
                                                                          req: PackRequest, top: int) -> None:
    """A run of the section statement limited to `top` rows (at most constraint_rows_needed) ships
    what the budget rule ships of its `top` rows; when constraint_run_complete holds, those rows
    alone build the pack that every constraint builds, so the store need not read further."""
    full = inputs(constraints=constraints)
    ranked = rank(constraints, term_token_sets(list(req.terms)), NOW)
    top = min(top, constraint_rows_needed(req.token_budget))
    shipped = ranked[:min(top, shipped_constraints(ranked, req.token_budget))]
    if constraint_run_complete([constraint_row_floor(c) for c in shipped], top, 4 * req.token_budget):
        assert canonical_json(assemble_pack(replace(full, constraints=shipped), req, NOW)) == \
            canonical_json(assemble_pack(full, req, NOW))


def test_the_likely_constraint_rows_are_a_first_read_never_past_the_needed_ones() -> None:
    assert [constraint_rows_likely(b) for b in (0, 31, 32, 2_000, 50_000)] == [2, 2, 3, 64, 1_564]
    assert all(constraint_rows_likely(b) <= constraint_rows_needed(b) for b in range(0, 5_000, 7))
    # Rows of the least cost likely assumes: the likely run ends past the budget, complete.
    assert constraint_run_complete([128] * 64, 64, 4 * 2_000)
    # Shorter rows that all fit: the store reads on, to constraint_rows_needed.
    assert not constraint_run_complete([60] * 64, 64, 4 * 2_000)
    assert constraint_run_complete([60] * 63, 64, 4 * 2_000)  # the fence ran out of constraints


@settings(max_examples=150)
@given(pack_inputs(), requests)
def test_constraints_past_what_the_store_ships_never_change_the_pack(inputs: PackInputs, req: PackRequest) -> None:
    """Shipping only the ranked constraints the budget could hold gives the same pack as shipping all."""
    ranked = rank(inputs.constraints, term_token_sets(list(req.terms)), NOW)
    shipped = replace(inputs, constraints=ranked[: shipped_constraints(ranked, req.token_budget)])
    assert canonical_json(assemble_pack(shipped, req, NOW)) == canonical_json(assemble_pack(inputs, req, NOW))


@given(st.lists(st.integers(1, 10**6), max_size=12, unique=True).flatmap(
    lambda numbers: st.tuples(*(candidate(number) for number in numbers))),
    st.lists(st.tuples(st.integers(-14, 14), st.integers(-14, 14) | st.none(), st.sampled_from([1, 2, -1]))
             | st.integers(-14, 14), max_size=6))
def test_rows_built_on_demand_read_like_the_list_of_all_rows(candidates: tuple[Candidate, ...], reads: list[Any]) -> None:
    """The fill's section rows, built as it reaches them, answer every read as the full list would."""
    from graphsvc.core.pack import _Rows

    every = [capsule_row(c) for c in candidates]
    rows = _Rows(list(candidates))
    assert len(rows) == len(every)
    for read in reads:
        if isinstance(read, int):
            if -len(every) <= read < len(every):
                assert rows[read] == every[read]
            else:
                with pytest.raises(IndexError):
                    rows[read]
        else:
            assert rows[read[0]:read[1]:read[2]] == every[read[0]:read[1]:read[2]]
    assert list(rows) == every
