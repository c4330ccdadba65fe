"""Issue 27's property: on a random store, no answer to a random scoped key contains the id,
headline or content of a capsule outside its scope (packs with and without fences and terms,
every list page, get of everything it may see, an update's answer), real Neo4j."""

from __future__ import annotations

import json
import re

from hypothesis import HealthCheck, given, settings, strategies as st

from graphsvc.access import Forbidden, covers
from graphsvc.errors import NotFound

from .bootstrap_support import NOW, Store
from .keys_support import acting_as, scoped

PROJECTS = ("a", "a/x", "ab", "b", "b/y/z", "c")
PREFIXES = ("a", "a/x", "ab", "b", "b/y", "c", "d")
KINDS = ("constraint", "decision", "failure_pattern", "task", "fact")

capsule = st.tuples(st.sampled_from(PROJECTS), st.sampled_from(KINDS), st.integers(0, 20))
world = st.fixed_dictionaries({
    "capsules": st.lists(capsule, min_size=1, max_size=14),
    "edges": st.lists(st.tuples(st.integers(0, 13), st.integers(0, 13), st.sampled_from(["BLOCKS", "SUPERSEDES"])),
                      max_size=10),
    "prefixes": st.lists(st.sampled_from(PREFIXES), min_size=1, max_size=3),
    "right": st.sampled_from(["read", "write"]),
    "terms": st.lists(st.sampled_from(["word", "marker", "zz"]), max_size=2),
})


def _visible(prefixes: list[str], project_id: str) -> bool:
    return any(covers(p, project_id) for p in prefixes)


@settings(max_examples=30, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(world)
def test_no_answer_to_a_scoped_key_names_a_capsule_outside_its_scope(db, case):
    db.wipe_all()
    s = Store(db)
    items = [{"project_id": project, "kind": kind, "content": f"Marker{n}q headline word\nsecret{n}z body",
              **({"status": "open"} if kind == "task" else {})}
             for n, (project, kind, _) in enumerate(case["capsules"])]
    made = s.many(items)
    for source, target, kind in case["edges"]:
        if source < len(made) and target < len(made) and source != target:
            if kind == "BLOCKS" and not (items[source]["kind"] == items[target]["kind"] == "task"):
                continue
            s.at(NOW).relate({"add": [{"type": kind, "from": made[source], "to": made[target]}]})
    hidden = [(capsule_id, n) for n, capsule_id in enumerate(made) if not _visible(case["prefixes"], items[n]["project_id"])]
    shown = [capsule_id for n, capsule_id in enumerate(made) if _visible(case["prefixes"], items[n]["project_id"])]
    service = s.at(NOW)
    answers = []
    with acting_as(scoped(case["right"], *case["prefixes"])):
        answers.append(service.bootstrap({"terms": case["terms"]}))
        answers.append(service.bootstrap({"terms": case["terms"], "token_budget": 100_000}))
        for prefix in PREFIXES:
            try:
                answers.append(service.bootstrap({"project_prefix": prefix, "terms": case["terms"]}))
                answers.append(service.list({"project_prefix": prefix}))
            except Forbidden as refused:
                answers.append(refused.to_body())
        cursor = None
        listed = []
        while True:
            page = service.list({"limit": 3, **({"cursor": cursor} if cursor else {})})
            answers.append(page)
            listed += [c["id"] for c in page["capsules"]]
            cursor = page["next_cursor"]
            if cursor is None:
                break
        if shown:
            answers.append(service.get(shown))
            if case["right"] == "write":
                answers.append(service.update(shown[0], {"tier": "active"}))
        for capsule_id, _ in hidden:
            try:
                service.get([capsule_id])
                raise AssertionError(f"{capsule_id} is outside the scope but get returned it")
            except NotFound:
                pass
    text = json.dumps(answers)
    for capsule_id, n in hidden:
        assert not re.search(re.escape(capsule_id) + r"(?![0-9])", text), (capsule_id, case)
        assert f"Marker{n}q" not in text and f"secret{n}z" not in text, (n, case)
    # and the scope hides nothing it covers: the unfenced list is exactly the visible live capsules
    assert sorted(listed, key=lambda i: int(i[4:])) == listed
    assert set(listed) == set(shown)
