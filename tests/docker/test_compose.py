"""The compose path: docker/compose.yaml brings up Neo4j + the service (both healthchecked), a real
pack goes through the service container, and everything is torn down (containers, network, volume).

On an engine without a bridge network (the project's own, docker/engine.sh) it adds
docker/compose.host.yaml: host networking, everything on 127.0.0.1 at free ports, and the locally
built images named by GRAPHSVC_NEO4J_IMAGE / GRAPHSVC_BASE_IMAGE / GRAPHSVC_SERVICE_IMAGE
(docker/images.sh). On a laptop's Docker it uses compose.yaml alone (official images, published
ports, also chosen free here). Without a Docker engine it skips, unless GRAPHSVC_REQUIRE_DOCKER=1
(`make test`), where that is a failure.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from pathlib import Path

import httpx
import pytest
import yaml

from tests.neo4j_containers import docker_answers, docker_required, free_port

REPO = Path(__file__).resolve().parents[2]
START_LIMIT = 480.0  # seconds for both healthchecks on a loaded 2-core machine (a cold Neo4j plans slowly)


def compose_command() -> list[str]:
    if shutil.which("docker") and subprocess.run(["docker", "compose", "version"], capture_output=True).returncode == 0:
        return ["docker", "compose"]
    if shutil.which("docker-compose"):
        return ["docker-compose"]
    if docker_required():
        pytest.fail("neither `docker compose` nor `docker-compose` is installed")
    pytest.skip("neither `docker compose` nor `docker-compose` is installed")


def engine_has_bridge() -> bool:
    import docker

    client = docker.from_env(timeout=10)
    try:
        return bool(client.networks.list(names=["bridge"]))
    finally:
        client.close()


def escape_dollars(value):
    """`config` prints values interpolated; `$` left in them were `$$` escapes and must stay literal."""
    if isinstance(value, str):
        return value.replace("$", "$$")
    if isinstance(value, dict):
        return {key: escape_dollars(item) for key, item in value.items()}
    if isinstance(value, list):
        return [escape_dollars(item) for item in value]
    return value


@pytest.fixture(scope="module")
def stack(tmp_path_factory):
    if not docker_answers():
        message = f"no Docker engine answers at {os.environ.get('DOCKER_HOST', 'the default socket')}"
        if docker_required():
            pytest.fail(message + " (GRAPHSVC_REQUIRE_DOCKER=1)")
        pytest.skip(message)
    compose = compose_command()
    project = f"graphsvc-compose-test-{os.getpid()}"
    files = ["-f", str(REPO / "docker/compose.yaml")]
    host_network = not engine_has_bridge()
    if host_network:
        files += ["-f", str(REPO / "docker/compose.host.yaml")]
        missing = [name for name in ("GRAPHSVC_NEO4J_IMAGE", "GRAPHSVC_BASE_IMAGE") if not os.environ.get(name)]
        if missing:
            pytest.fail(f"this engine has no bridge and no registry: set {', '.join(missing)} to the locally "
                        "built images (docker/images.sh prints them; `make test` does this)")
    app_port = free_port()
    env = dict(os.environ,
               GRAPHSVC_COMPOSE_BOLT_PORT=str(free_port()), GRAPHSVC_COMPOSE_HTTP_PORT=str(free_port()),
               GRAPHSVC_COMPOSE_APP_PORT=str(app_port), NEO4J_PASSWORD="compose-test-password",
               GRAPHSVC_API_TOKEN="")
    env.pop("NEO4J_URI", None)
    base = [*compose, "-p", project, *files]
    if host_network:
        # Compose merges compose.yaml + compose.host.yaml; the published `ports:` of compose.yaml are
        # meaningless under host networking, but Compose v1 refuses the combination (v2 only warns)
        # and an override cannot remove a list. So: compose's own merged, interpolated config, minus
        # `ports` on host-network services, is what `up` runs.
        merged = subprocess.run([*base, "config"], env=env, cwd=REPO, capture_output=True, text=True)
        assert merged.returncode == 0, merged.stderr
        config = yaml.safe_load(merged.stdout)
        for service in config["services"].values():
            if service.get("network_mode") == "host":
                service.pop("ports", None)
        effective = tmp_path_factory.mktemp("compose") / "compose.effective.yaml"
        effective.write_text(yaml.safe_dump(escape_dollars(config), sort_keys=False))
        base = [*compose, "-p", project, "-f", str(effective)]

    def run(*args: str, check: bool = True, timeout: float = 600) -> subprocess.CompletedProcess:
        done = subprocess.run([*base, *args], env=env, cwd=REPO, capture_output=True, text=True, timeout=timeout)
        if check and done.returncode != 0:
            raise AssertionError(f"{' '.join(args)} exited {done.returncode}:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}")
        return done

    # Images built by docker/images.sh are reused as they are; otherwise compose builds the service.
    build = ["--no-build"] if os.environ.get("GRAPHSVC_SERVICE_IMAGE") else ["--build"]
    began = time.monotonic()
    try:
        up = run("up", "-d", *build, check=False)
        if up.returncode != 0:
            raise AssertionError(f"compose up exited {up.returncode}:\n{up.stdout[-2000:]}\n{up.stderr[-2000:]}\n"
                                 + run("logs", "--tail", "40", check=False).stdout)
        ids = {name: run("ps", "-q", name).stdout.strip() for name in ("neo4j", "graphsvc")}
        deadline = time.monotonic() + START_LIMIT
        health: dict[str, str] = {}
        while time.monotonic() < deadline:
            health = {name: subprocess.run(
                ["docker", "inspect", "-f", "{{.State.Health.Status}}", cid], env=env,
                capture_output=True, text=True).stdout.strip() for name, cid in ids.items()}
            if all(status == "healthy" for status in health.values()):
                break
            assert "unhealthy" not in health.values(), (health, run("logs", "--tail", "60", check=False).stdout)
            time.sleep(2)
        else:
            raise AssertionError(f"not healthy within {START_LIMIT:.0f}s: {health}\n"
                                 + run("logs", "--tail", "60", check=False).stdout)
        print(f"\n[compose] both services healthy {time.monotonic() - began:.1f}s after `up` "
              f"({'host network, local images' if host_network else 'published ports'})")
        client = httpx.Client(base_url=f"http://127.0.0.1:{app_port}", timeout=30.0)
        client.stack = dict(ids=ids, health=health, host_network=host_network)  # type: ignore[attr-defined]
        yield client
        client.close()
    finally:
        run("down", "-v", "--remove-orphans", "-t", "20", check=False, timeout=300)
        leftover = subprocess.run(["docker", "ps", "-aq", "--filter", f"label=com.docker.compose.project={project}"],
                                  env=env, capture_output=True, text=True).stdout.strip()
        assert not leftover, f"containers left behind by compose down: {leftover}"


def test_compose_stack_serves_a_real_pack_from_the_service_container(stack, capsys):
    assert stack.stack["health"] == {"neo4j": "healthy", "graphsvc": "healthy"}
    assert stack.get("/healthz").status_code == 200
    assert stack.get("/readyz").status_code == 200

    created = stack.post("/v1/capsules", json={"items": [
        {"project_id": "compose", "kind": "constraint", "content": "Never deploy on Fridays\nFreeze rule."},
        {"project_id": "compose", "kind": "task", "content": "Write the release notes"},
        {"project_id": "compose/api", "kind": "decision", "content": "Bolt over loopback only"},
    ]})
    assert created.status_code == 201, created.text
    constraint, task, decision = created.json()["ids"]

    response = stack.post("/v1/memory_bootstrap",
                          json={"project_prefix": "compose", "terms": ["release"], "token_budget": 800})
    assert response.status_code == 200, response.text
    pack = response.json()
    assert pack["advisory"] == "ADVISORY_NOT_AUTHORITY"
    assert [row["id"] for row in pack["constraints"]] == [constraint]
    assert pack["constraints"][0]["headline"] == "Never deploy on Fridays"
    assert pack["ready"]["state"] == "next_action"
    assert pack["ready"]["next_action"]["id"] == task
    assert [row["id"] for row in pack["decisions"]] == [decision]
    assert pack["handles"] == [constraint, task, decision]
    assert pack["budget"]["used_tokens"] <= 800
    assert pack["budget"]["used_tokens"] == -(-len(response.content) // 4)  # the canonical body, as sent
    with capsys.disabled():
        print(f"[compose] pack from the service container: {len(response.content)} bytes, "
              f"handles {json.dumps(pack['handles'])}")
