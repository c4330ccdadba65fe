"""The `graphsvc` CLI fails on expected problems with ONE stderr line and exit status 2, never a traceback.

Run as a subprocess, as a user would; none of these cases reaches Neo4j.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

GRAPHSVC = Path(sys.executable).with_name("graphsvc")


def run_cli(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(GRAPHSVC), *args], capture_output=True, text=True, timeout=60,
                          env={**os.environ, **env})


def assert_one_line_failure(result: subprocess.CompletedProcess[str], *words: str) -> None:
    assert result.returncode == 2, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("graphsvc: "), result.stderr
    for word in words:
        assert word in lines[0], (word, lines[0])
    assert result.stdout == ""


def test_importing_a_missing_file_is_one_line(tmp_path):
    assert_one_line_failure(run_cli("import", str(tmp_path / "nonexistent.jsonl")), "No such file", "nonexistent.jsonl")


def test_importing_a_file_that_is_not_utf8_is_one_line(tmp_path):
    path = tmp_path / "latin1.jsonl"
    path.write_bytes(b'{"capsule": {"content": "caf\xe9"}}\n')
    assert_one_line_failure(run_cli("import", str(path)), "not UTF-8")


def test_an_unknown_log_level_is_refused_at_start(tmp_path):
    assert_one_line_failure(run_cli("bootstrap", GRAPHSVC_LOG_LEVEL="verbose"), "GRAPHSVC_LOG_LEVEL", "verbose", "debug")


def test_a_bad_setting_never_echoes_its_value():
    result = run_cli("bootstrap", GRAPHSVC_PORT="s3cret-not-a-port")
    assert_one_line_failure(result, "GRAPHSVC_PORT")
    assert "s3cret" not in result.stderr


def test_a_neo4j_uri_carrying_a_password_is_one_line_without_it():
    result = run_cli("bootstrap", NEO4J_URI="bolt://neo4j:pw-s3cret@127.0.0.1:7687")
    assert_one_line_failure(result, "NEO4J_URI", "bolt://***@127.0.0.1:7687")
    assert "pw-s3cret" not in result.stderr


def test_log_levels_are_case_insensitive():
    from graphsvc.config import Settings

    assert Settings(graphsvc_log_level="WARNING").graphsvc_log_level == "warning"


def test_a_reader_that_goes_away_ends_export_quietly(db, neo4j_target):
    # `graphsvc export | head`: the pipe closes long before ~600 KB of lines are written.
    from graphsvc.service import GraphService

    service = GraphService(db)
    for batch in range(2):
        service.ingest({"items": [{"project_id": "p", "kind": "fact", "content": f"fact {batch}-{n} " + "x" * 250}
                                  for n in range(1000)]})
    env = {**os.environ, "NEO4J_URI": neo4j_target.uri, "NEO4J_USER": neo4j_target.user,
           "NEO4J_PASSWORD": neo4j_target.password, "GRAPHSVC_NEO4J_TIMEOUT": "30"}
    process = subprocess.Popen([str(GRAPHSVC), "export"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    assert process.stdout is not None and process.stderr is not None
    assert process.stdout.read(100).startswith(b'{"capsule"')
    process.stdout.close()
    stderr = process.stderr.read().decode()
    assert process.wait(timeout=60) == 1
    assert stderr == ""
