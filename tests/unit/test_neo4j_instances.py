"""`graphsvc neo4j --instance`: a name with no chosen ports is refused instead of silently using dev's.

Only name/port resolution is exercised (and `status` of a never-created instance in a temporary
data dir); no server is started.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from graphsvc.neo4j_local import INSTANCE_PORTS, LocalNeo4j, LocalNeo4jError

GRAPHSVC = Path(sys.executable).with_name("graphsvc")


@pytest.fixture(autouse=True)
def no_port_overrides(monkeypatch):
    for name in list(os.environ):
        if name.startswith("GRAPHSVC_NEO4J_") and name.endswith("_PORT"):
            monkeypatch.delenv(name)


def test_known_instances_keep_their_ports():
    for name, (bolt, http) in INSTANCE_PORTS.items():
        local = LocalNeo4j.checked(name)
        assert (local.bolt_port, local.http_port) == (bolt, http)


@pytest.mark.parametrize("env", [{}, {"GRAPHSVC_NEO4J_FOO_BOLT_PORT": "7790"}, {"GRAPHSVC_NEO4J_FOO_HTTP_PORT": "7791"}])
def test_an_unknown_instance_needs_both_ports(monkeypatch, env):
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    with pytest.raises(LocalNeo4jError, match="unknown instance 'foo'.*GRAPHSVC_NEO4J_FOO_"):
        LocalNeo4j.checked("foo")


def test_a_custom_instance_with_both_ports_is_accepted(monkeypatch):
    monkeypatch.setenv("GRAPHSVC_NEO4J_FOO_BOLT_PORT", "7790")
    monkeypatch.setenv("GRAPHSVC_NEO4J_FOO_HTTP_PORT", "7791")
    local = LocalNeo4j.checked("foo")
    assert (local.instance, local.bolt_port, local.http_port) == ("foo", 7790, 7791)


@pytest.mark.parametrize("name", ["../dev", "Foo", "", "a b"])
def test_names_that_are_not_folder_and_variable_safe_are_refused(name):
    with pytest.raises(LocalNeo4jError, match="must be lowercase"):
        LocalNeo4j.checked(name)


def test_a_port_that_is_not_a_number_is_refused(monkeypatch):
    monkeypatch.setenv("GRAPHSVC_NEO4J_TEST_BOLT_PORT", "seven")
    with pytest.raises(LocalNeo4jError, match="not a port number"):
        LocalNeo4j.checked("test")


def run_cli(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(GRAPHSVC), *args], capture_output=True, text=True, timeout=60,
                          env={**os.environ, **env})


def test_the_command_refuses_an_unknown_instance_and_lists_the_known_ones(tmp_path):
    refused = run_cli("neo4j", "start", "--instance", "foo", GRAPHSVC_DATA_DIR=str(tmp_path))
    assert refused.returncode == 1 and refused.stdout == ""
    assert "unknown instance 'foo'" in refused.stderr and "GRAPHSVC_NEO4J_FOO_BOLT_PORT" in refused.stderr
    assert list(tmp_path.iterdir()) == []  # nothing was laid out
    assert "{dev|test|bench}" in run_cli("neo4j", "--help").stdout


def test_the_command_accepts_a_custom_instance_with_both_ports(tmp_path):
    status = run_cli("neo4j", "status", "--instance", "foo", GRAPHSVC_DATA_DIR=str(tmp_path),
                     GRAPHSVC_NEO4J_FOO_BOLT_PORT="7790", GRAPHSVC_NEO4J_FOO_HTTP_PORT="7791")
    assert status.returncode == 3, status.stderr  # stopped: it was never started
    assert "bolt://127.0.0.1:7790" in status.stdout and "http://127.0.0.1:7791/browser/" in status.stdout


@pytest.fixture
def bench_home(tmp_path, monkeypatch):
    """A local instance whose folder is under tmp_path (nothing is started)."""
    monkeypatch.setenv("GRAPHSVC_DATA_DIR", str(tmp_path))
    monkeypatch.delenv("GRAPHSVC_NEO4J_CLASS_ARCHIVE", raising=False)
    return LocalNeo4j.named("bench")


def test_without_an_archive_the_jvm_writes_one_on_exit_and_a_clean_stop_keeps_it(bench_home):
    archive = bench_home.class_archive
    assert bench_home._class_archive_line() == f"server.jvm.additional=-XX:ArchiveClassesAtExit={archive}.tmp"
    Path(f"{archive}.tmp").write_bytes(b"classes")  # what the JVM writes as it exits
    bench_home._keep_class_archive()
    assert archive.read_bytes() == b"classes" and not Path(f"{archive}.tmp").exists()
    assert bench_home._class_archive_line() == f"server.jvm.additional=-XX:SharedArchiveFile={archive}"


def test_archives_of_another_jdk_or_jars_and_writes_cut_short_are_removed(bench_home):
    archive = bench_home.class_archive
    archive.parent.mkdir(parents=True)
    stale, cut_short = archive.with_name("classes-000000000000.jsa"), Path(f"{archive}.tmp")
    stale.write_bytes(b"old jdk")
    cut_short.write_bytes(b"half")  # the JVM was killed while writing it: never mapped
    assert "ArchiveClassesAtExit" in bench_home._class_archive_line()
    assert not stale.exists() and not cut_short.exists()


def test_an_empty_archive_is_written_again(bench_home):
    archive = bench_home.class_archive
    archive.parent.mkdir(parents=True)
    archive.write_bytes(b"")
    assert "ArchiveClassesAtExit" in bench_home._class_archive_line()


def test_the_archive_can_be_turned_off(bench_home, monkeypatch):
    monkeypatch.setenv("GRAPHSVC_NEO4J_CLASS_ARCHIVE", "off")
    assert bench_home._class_archive_line().startswith("#")
    written = Path(f"{bench_home.class_archive}.tmp")
    written.parent.mkdir(parents=True)
    written.write_bytes(b"classes")
    bench_home._keep_class_archive()
    assert not bench_home.class_archive.exists()


def test_a_throwaway_instance_writes_no_archive(bench_home):
    import dataclasses

    throwaway = dataclasses.replace(bench_home, keeps_class_archive=False)
    assert throwaway._class_archive_line().startswith("#")


def test_each_instance_has_its_own_archive(tmp_path, monkeypatch):
    monkeypatch.setenv("GRAPHSVC_DATA_DIR", str(tmp_path))
    assert LocalNeo4j.named("dev").class_archive.name == LocalNeo4j.named("test").class_archive.name
    assert LocalNeo4j.named("dev").class_archive != LocalNeo4j.named("test").class_archive
