"""bench.mixed's freeze report: which requests count as in the freeze, what breaks the rule, the recovery."""

from __future__ import annotations

from bench.mixed import BOUND_SLACK_S, Tally, freeze_report


def test_the_freeze_report_counts_requests_in_flight_during_the_freeze(monkeypatch):
    monkeypatch.delenv("GRAPHSVC_NEO4J_TIMEOUT", raising=False)
    monkeypatch.delenv("GRAPHSVC_QUERY_TIMEOUT", raising=False)
    tally = Tally(calls=[
        (0.0, 1.0, 200, False),    # answered before the freeze: not counted
        (9.0, 12.0, 503, True),    # begun before, answered during: counted, fine
        (11.0, 11.5, 503, True),   # a fast 503 + Retry-After: fine
        (12.0, 19.6, 503, True),   # past the 7 s bound + slack
        (13.0, 13.2, 503, False),  # a 503 without Retry-After
        (14.0, 14.1, 500, False),  # neither 503 nor 2xx
        (19.0, 20.5, 200, False),  # answered after SIGCONT: fine
        (21.0, 21.1, 503, True),   # begun after the freeze: not counted; the last non-2xx after it
        (22.0, 22.1, 200, False),
    ])
    probes = [(10.5, 2.0, 200), (11.0, 4.0, 200), (15.0, 120.0, 200), (30.0, 900.0, 200)]
    report = freeze_report({"frozen": 10.0, "thawed": 20.0}, tally, probes, {101: 40, 102: 38})
    assert report["requests_in_freeze"] == 6
    assert report["statuses_in_freeze"] == {"503": 4, "500": 1, "200": 1}
    assert report["not_503_with_retry_after_nor_2xx"] == 2
    assert report["bound_s"] == 7.0 and report["bound_slack_s"] == BOUND_SLACK_S
    assert report["over_bound"] == 1 and report["longest_wait_s"] == 7.6
    assert report["healthz_in_freeze"] == {"n": 3, "non_200": 0, "p50_ms": 4.0, "p99_ms": 120.0, "max_ms": 120.0}
    assert report["worker_threads_max"] == {"101": 40, "102": 38}
    assert report["first_2xx_after_sigcont_s"] == 0.5
    assert report["last_non_2xx_after_sigcont_s"] == 1.1
    assert report["non_2xx_from_10s_after_sigcont"] == 0
