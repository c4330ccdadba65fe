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
