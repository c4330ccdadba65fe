"""Neo4j in a container, through testcontainers' own API (`Neo4jContainer`).

Used by tests/conftest.py (the session's Neo4j, discovery step 2) and tests/integration/test_outage.py
(a Neo4j of its own that it stops, freezes and kills).

- Image: `GRAPHSVC_NEO4J_IMAGE` when set (a machine without a registry builds one locally:
  `docker/images.sh`), else the official `neo4j:5.26-community` (pulled from Docker Hub on a laptop).
  An image that is neither present nor pullable is a clear failure, never a quiet fallback.
- Network: host networking when the engine has no `bridge` network (the project's own engine runs
  with `--bridge=none`) or `GRAPHSVC_DOCKER_NETWORK=host`; Neo4j then listens on 127.0.0.1 on free
  ports chosen here, and the container gets no address of its own. Elsewhere (a laptop's Docker),
  testcontainers' usual published ports.
"""

from __future__ import annotations

import os
import socket
import time

OFFICIAL_IMAGE = "neo4j:5.26-community"
PASSWORD = "graphsvc-container-password"


class ContainerUnavailable(RuntimeError):
    """A Docker engine answers, but the Neo4j container cannot be had (image missing, start failed)."""


def neo4j_image() -> str:
    return os.environ.get("GRAPHSVC_NEO4J_IMAGE") or OFFICIAL_IMAGE


def docker_answers() -> bool:
    """A Docker engine answers at DOCKER_HOST (or the default socket)."""
    try:
        import docker  # shipped with testcontainers

        client = docker.from_env(timeout=3)
        try:
            client.ping()
        finally:
            client.close()
        return True
    except Exception:
        return False


def docker_required() -> bool:
    """`make test` sets GRAPHSVC_REQUIRE_DOCKER=1 for its container steps: no engine is then an error."""
    return os.environ.get("GRAPHSVC_REQUIRE_DOCKER") == "1"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _use_host_network(client) -> bool:
    choice = os.environ.get("GRAPHSVC_DOCKER_NETWORK", "")
    if choice:
        return choice == "host"
    return not client.networks.list(names=["bridge"])


def ensure_image(image: str) -> None:
    """The image is on the engine, or is pulled now; otherwise a ContainerUnavailable that says what to do."""
    import docker

    client = docker.from_env(timeout=30)
    try:
        try:
            client.images.get(image)
            return
        except docker.errors.ImageNotFound:
            pass
        try:
            client.images.pull(image)
        except docker.errors.APIError as exc:
            raise ContainerUnavailable(
                f"the Neo4j image '{image}' is not on the Docker engine at "
                f"{os.environ.get('DOCKER_HOST', 'the default socket')} and could not be pulled "
                f"({exc.explanation or exc}). Build the local one with `make docker-images` and pass it as "
                f"GRAPHSVC_NEO4J_IMAGE, or unset DOCKER_HOST to use the local Neo4j."
            ) from exc
    finally:
        client.close()


def neo4j_container(image: str | None = None, heap: str = "512m", pagecache: str = "256m"):
    """A started testcontainers Neo4jContainer (call .stop() when done), with `.bolt_uri`,
    `.http_url` and `.password` set. Raises ContainerUnavailable with the reason."""
    import docker
    try:
        from testcontainers.community.neo4j import Neo4jContainer
    except ImportError:  # testcontainers < 4.14
        from testcontainers.neo4j import Neo4jContainer

    image = image or neo4j_image()
    ensure_image(image)
    client = docker.from_env(timeout=30)
    try:
        host_network = _use_host_network(client)
    finally:
        client.close()

    container = Neo4jContainer(image, password=PASSWORD)
    container.with_env("NEO4J_server_memory_heap_initial__size", heap)
    container.with_env("NEO4J_server_memory_heap_max__size", heap)
    container.with_env("NEO4J_server_memory_pagecache_size", pagecache)
    container.with_env("NEO4J_dbms_usage__report_enabled", "false")
    # What docs/design.md's Planning section asks of every Neo4j graphsvc uses (test_plan_cache relies on it).
    container.with_env("NEO4J_dbms_cypher_min__replan__interval", "5m")
    if host_network:
        bolt, http = free_port(), free_port()
        container.ports = {}  # nothing to publish: the container shares the host's loopback
        container.with_kwargs(network_mode="host")
        for key, port in (("bolt", bolt), ("http", http)):
            container.with_env(f"NEO4J_server_{key}_listen__address", f"127.0.0.1:{port}")
            container.with_env(f"NEO4J_server_{key}_advertised__address", f"127.0.0.1:{port}")
        container.get_container_host_ip = lambda: "127.0.0.1"  # type: ignore[method-assign]
        container.get_exposed_port = lambda port: {7687: bolt, 7474: http}[port]  # type: ignore[method-assign]
    else:
        container.with_exposed_ports(7474)
    try:
        container.start()  # waits for "Remote interface available at" and a Bolt connection
    except Exception as exc:
        logs = ""
        try:
            out, err = container.get_logs()
            logs = (out + err).decode(errors="replace")[-3000:]
        except Exception:
            pass
        try:
            container.stop()
        except Exception:
            pass
        raise ContainerUnavailable(f"the Neo4j container ({image}) did not start: {exc!r}\n{logs}") from exc
    container.bolt_uri = container.get_connection_url()
    container.http_url = f"http://{container.get_container_host_ip()}:{container.get_exposed_port(7474)}"
    container.host_network = host_network
    return container


def wait_for_bolt(uri: str, password: str, timeout: float) -> None:
    """Poll Bolt with a real query until it answers or `timeout` passes."""
    from neo4j import GraphDatabase
    from neo4j.exceptions import Neo4jError, ServiceUnavailable, SessionExpired

    deadline = time.monotonic() + timeout
    last: Exception | None = None
    while time.monotonic() < deadline:
        try:
            with GraphDatabase.driver(uri, auth=("neo4j", password), connection_timeout=2.0) as driver:
                driver.execute_query("RETURN 1", database_="neo4j")
                return
        except (ServiceUnavailable, SessionExpired, Neo4jError, OSError) as exc:
            last = exc
            time.sleep(0.5)
    raise ContainerUnavailable(f"Bolt at {uri} did not answer within {timeout:.0f}s ({type(last).__name__})")
