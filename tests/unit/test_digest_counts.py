"""graphsvc.core.digest.census_counts: SPEC §9's counts and blocked_total from census tallies, on plain data."""

from __future__ import annotations

from hypothesis import given, strategies as st

from graphsvc.core.digest import census_counts

KINDS = ("task", "epic", "fact", "decision")
STATES = ("tombstoned", "superseded", "blocked", "current")


def test_blocked_and_current_are_live_unless_expired_and_projects_add_up():
    census = [{"census": "task:current", "project_id": "a", "n": 3},
              {"census": "task:current", "project_id": "b", "n": 1},
              {"census": "task:blocked", "project_id": "b", "n": 2},
              {"census": "fact:tombstoned", "project_id": "a", "n": 1},
              {"census": "decision:superseded", "project_id": "a", "n": 4}]
    expired = [{"census": "task:blocked", "n": 1}, {"census": "task:current", "n": 2}]
    counts, blocked_total = census_counts(census, expired)
    assert counts == {"decision": {"live": 0, "superseded": 4, "expired": 0, "tombstoned": 0},
                      "fact": {"live": 0, "superseded": 0, "expired": 0, "tombstoned": 1},
                      "task": {"live": 3, "superseded": 0, "expired": 3, "tombstoned": 0}}
    assert list(counts) == sorted(counts)
    assert blocked_total == 1


def test_a_kind_whose_tallies_are_all_zero_is_left_out():
    counts, blocked_total = census_counts([{"census": "fact:current", "project_id": "a", "n": 0},
                                           {"census": "epic:current", "project_id": "a", "n": 1}], [])
    assert counts == {"epic": {"live": 1, "superseded": 0, "expired": 0, "tombstoned": 0}} and blocked_total == 0


capsules = st.lists(st.tuples(st.sampled_from(KINDS), st.sampled_from(STATES), st.booleans(),
                              st.sampled_from(("a", "b", "c"))), max_size=40)


@given(capsules)
def test_equals_counting_each_capsule_once(rows):
    """Tallies built from capsules (kind, census state, expired?, project) give the counts of SPEC §9
    counted one capsule at a time."""
    tallies: dict[tuple[str, str], int] = {}
    gone: dict[str, int] = {}
    expected: dict[str, dict[str, int]] = {}
    blocked = 0
    for kind, state, expired, project in rows:
        name = f"{kind}:{state}"
        tallies[(name, project)] = tallies.get((name, project), 0) + 1
        live_state = state in ("blocked", "current")
        if live_state and expired:
            gone[name] = gone.get(name, 0) + 1
        shown = ("expired" if expired else "live") if live_state else state
        expected.setdefault(kind, dict.fromkeys(("live", "superseded", "expired", "tombstoned"), 0))[shown] += 1
        blocked += state == "blocked" and not expired
    census = [{"census": name, "project_id": project, "n": n} for (name, project), n in sorted(tallies.items())]
    counts, blocked_total = census_counts(census, [{"census": name, "n": n} for name, n in sorted(gone.items())])
    assert counts == dict(sorted(expected.items())) and blocked_total == blocked
