"""Settings that shape the process model: the worker count and the CPUs `auto` counts."""

from __future__ import annotations

import pytest

from graphsvc.config import AUTO_WORKERS_CAP, Settings, cpu_quota, usable_cpus


def test_a_worker_count_is_a_number_or_auto():
    assert Settings(graphsvc_workers="auto").graphsvc_workers == min(usable_cpus(), AUTO_WORKERS_CAP)
    assert Settings(graphsvc_workers=" AUTO ").graphsvc_workers == min(usable_cpus(), AUTO_WORKERS_CAP)
    assert Settings(graphsvc_workers="3").graphsvc_workers == 3
    for wrong, rule in (("0", "1..64"), ("65", "1..64"), ("many", "auto"), ("2.5", "whole number")):
        with pytest.raises(ValueError, match=rule):
            Settings(graphsvc_workers=wrong)


@pytest.mark.parametrize(("text", "cpus"), [
    ("max 100000\n", None),          # no quota
    ("200000 100000\n", 2),          # --cpus 2
    ("150000 100000\n", 2),          # --cpus 1.5: rounded up
    ("50000 100000\n", 1),           # --cpus 0.5: still one worker
    ("garbage\n", None),
])
def test_a_cgroup_cpu_quota_counts_whole_cpus(tmp_path, text, cpus):
    path = tmp_path / "cpu.max"
    path.write_text(text)
    assert cpu_quota(str(path)) == cpus


def test_no_cgroup_file_means_no_quota(tmp_path):
    assert cpu_quota(str(tmp_path / "absent")) is None
    assert usable_cpus() >= 1


def test_the_shutdown_grace_has_a_default_and_refuses_a_negative_wait(monkeypatch):
    monkeypatch.delenv("GRAPHSVC_SHUTDOWN_GRACE_S", raising=False)
    assert Settings().graphsvc_shutdown_grace_s == 10.0
    monkeypatch.setenv("GRAPHSVC_SHUTDOWN_GRACE_S", "2.5")
    assert Settings().graphsvc_shutdown_grace_s == 2.5
    with pytest.raises(ValueError, match="greater than or equal to 0"):
        Settings(graphsvc_shutdown_grace_s=-1)
