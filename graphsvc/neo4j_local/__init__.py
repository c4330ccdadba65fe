"""The project's own Neo4j 5.26 Community server, assembled from Maven Central.

Why this exists: the machines this project runs on have Java and Maven but no
Docker engine, and a real Neo4j is not optional (everything computes in it).
`LocalNeo4j` fetches the server jars with `mvn dependency:copy-dependencies`
into a cache outside the repository, lays out a NEO4J_HOME (conf, data, logs,
run), and drives Neo4j's own launcher class `org.neo4j.server.startup.Neo4jCommand`
(`start` / `stop` / `status`), the same entry point `bin/neo4j` uses.

Named instances keep a developer's data safe from the test suite and benchmarks:
`dev` (Bolt 7687, HTTP 7474) holds the demo data; `test` (Bolt 7688, HTTP 7475)
is wiped between tests; `bench` (Bolt 7689, HTTP 7476) is wiped by benchmarks.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

NEO4J_VERSION = "5.26.30"
_HERE = Path(__file__).resolve().parent
_LAUNCHER = "org.neo4j.server.startup.Neo4jCommand"
_ADMIN = "org.neo4j.server.startup.Neo4jAdminCommand"

DEFAULT_PASSWORD = "graphsvc-local-password"

INSTANCE_PORTS = {"dev": (7687, 7474), "test": (7688, 7475), "bench": (7689, 7476)}
#: Instance names become a folder name and part of an environment variable name.
_INSTANCE_NAME = re.compile(r"[a-z][a-z0-9_-]{0,31}")


class LocalNeo4jError(RuntimeError):
    """The local server could not be installed, started or reached."""


def _cache_dir() -> Path:
    base = os.environ.get("GRAPHSVC_CACHE_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "graphsvc"
    )
    return Path(base)


def _data_root() -> Path:
    base = os.environ.get("GRAPHSVC_DATA_DIR") or os.path.join(
        os.environ.get("XDG_DATA_HOME") or os.path.expanduser("~/.local/share"), "graphsvc"
    )
    return Path(base)


@dataclass(frozen=True)
class LocalNeo4j:
    """One named local server instance: where it lives and how to reach it."""

    instance: str = "dev"
    bolt_port: int = 7687
    http_port: int = 7474
    password: str = DEFAULT_PASSWORD
    heap: str = "1g"
    pagecache: str = "512m"

    @classmethod
    def named(cls, instance: str) -> "LocalNeo4j":
        """The instance with its conventional ports, overridable from the environment."""
        bolt, http = INSTANCE_PORTS.get(instance, (7687, 7474))
        prefix = f"GRAPHSVC_NEO4J_{instance.upper()}_"
        return cls(
            instance=instance,
            bolt_port=int(os.environ.get(prefix + "BOLT_PORT", bolt)),
            http_port=int(os.environ.get(prefix + "HTTP_PORT", http)),
            password=os.environ.get("GRAPHSVC_LOCAL_NEO4J_PASSWORD", DEFAULT_PASSWORD),
            # a 1M-capsule store (~2.7 GB) wants a larger page cache than a laptop's default
            heap=os.environ.get(prefix + "HEAP", cls.heap),
            pagecache=os.environ.get(prefix + "PAGECACHE", cls.pagecache),
        )

    @classmethod
    def checked(cls, instance: str) -> "LocalNeo4j":
        """`named`, but refusing an instance whose ports nobody chose.

        Any other name would silently get dev's ports (and reach dev's server or clash with
        it), so a custom instance must set both GRAPHSVC_NEO4J_<NAME>_BOLT_PORT and _HTTP_PORT.
        """
        if not _INSTANCE_NAME.fullmatch(instance):
            raise LocalNeo4jError(f"instance name '{instance}' must be lowercase letters, digits, '_' or '-' "
                                  "(starting with a letter, at most 32 characters)")
        prefix = f"GRAPHSVC_NEO4J_{instance.upper()}_"
        if instance not in INSTANCE_PORTS:
            missing = [prefix + port for port in ("BOLT_PORT", "HTTP_PORT") if not os.environ.get(prefix + port)]
            if missing:
                raise LocalNeo4jError(
                    f"unknown instance '{instance}': use one of {', '.join(INSTANCE_PORTS)}, or choose its ports "
                    f"by setting {' and '.join(missing)}"
                )
        for port in ("BOLT_PORT", "HTTP_PORT"):
            value = os.environ.get(prefix + port)
            if value is not None and not (value.isdigit() and 1 <= int(value) <= 65535):
                raise LocalNeo4jError(f"{prefix}{port}='{value}' is not a port number (1-65535)")
        return cls.named(instance)

    # -- where things are -------------------------------------------------

    @property
    def lib_dir(self) -> Path:
        return _cache_dir() / f"neo4j-{NEO4J_VERSION}" / "lib"

    @property
    def home(self) -> Path:
        return _data_root() / f"neo4j-{self.instance}"

    @property
    def log_file(self) -> Path:
        return self.home / "logs" / "neo4j.log"

    @property
    def bolt_uri(self) -> str:
        return f"bolt://127.0.0.1:{self.bolt_port}"

    @property
    def browser_url(self) -> str:
        return f"http://127.0.0.1:{self.http_port}/browser/"

    # -- install ----------------------------------------------------------

    def install(self) -> Path:
        """Fetch the server jars once; later calls return the cached folder at once."""
        marker = self.lib_dir.parent / ".complete"
        if marker.exists():
            return self.lib_dir
        mvn = shutil.which("mvn")
        if mvn is None:
            raise LocalNeo4jError("Maven (mvn) is not on PATH; it is needed once to fetch Neo4j jars.")
        self.lib_dir.mkdir(parents=True, exist_ok=True)
        cmd = [
            mvn, "-q", "-B", "-f", str(_HERE / "pom.xml"),
            "dependency:copy-dependencies",
            f"-DoutputDirectory={self.lib_dir}",
            "-DincludeScope=runtime",
        ]
        proc = subprocess.run(cmd, capture_output=True, text=True)
        if proc.returncode != 0:
            raise LocalNeo4jError("mvn could not fetch Neo4j:\n" + (proc.stdout + proc.stderr)[-4000:])
        marker.write_text(NEO4J_VERSION + "\n")
        return self.lib_dir

    # -- lifecycle --------------------------------------------------------

    def _env(self) -> dict[str, str]:
        env = dict(os.environ)
        env["NEO4J_HOME"] = str(self.home)
        env["NEO4J_CONF"] = str(self.home / "conf")
        return env

    def _java(self) -> str:
        java_home = os.environ.get("JAVA_HOME")
        if java_home and Path(java_home, "bin", "java").exists():
            return str(Path(java_home, "bin", "java"))
        java = shutil.which("java")
        if java is None:
            raise LocalNeo4jError("Java 17 or 21 is needed to run Neo4j 5.26; `java` is not on PATH.")
        return java

    def _launcher(self, main_class: str, *args: str) -> subprocess.CompletedProcess[str]:
        classpath = str(self.lib_dir) + "/*"
        return subprocess.run(
            [self._java(), "-cp", classpath, main_class, *args],
            env=self._env(), capture_output=True, text=True, stdin=subprocess.DEVNULL,
        )

    def _layout(self) -> None:
        for sub in ("conf", "data", "logs", "run", "plugins", "import", "licenses"):
            (self.home / sub).mkdir(parents=True, exist_ok=True)
        lib_link = self.home / "lib"
        if lib_link.is_symlink() or lib_link.exists():
            if lib_link.resolve() != self.lib_dir.resolve():
                lib_link.unlink()
        if not lib_link.exists():
            lib_link.symlink_to(self.lib_dir, target_is_directory=True)
        template = (_HERE / "neo4j.conf.template").read_text()
        conf = template.format(
            instance=self.instance, bolt_port=self.bolt_port, http_port=self.http_port,
            heap=self.heap, pagecache=self.pagecache,
        )
        (self.home / "conf" / "neo4j.conf").write_text(conf)
        password_marker = self.home / "data" / ".graphsvc-password-set"
        if not password_marker.exists():
            proc = self._launcher(_ADMIN, "dbms", "set-initial-password", self.password)
            if proc.returncode != 0:
                raise LocalNeo4jError("could not set the initial password:\n" + proc.stderr[-2000:])
            password_marker.write_text("set\n")

    def is_running(self) -> bool:
        if not self.lib_dir.exists() or not self.home.exists():
            return False
        return self._launcher(_LAUNCHER, "status").returncode == 0

    def start(self, timeout: float = 180.0) -> bool:
        """Start the server and wait until Bolt answers. Returns False if it was already up."""
        self.install()
        if self.is_running():
            self.wait_for_bolt(timeout)
            return False
        self._layout()
        proc = self._launcher(_LAUNCHER, "start")
        if proc.returncode != 0:
            raise LocalNeo4jError(
                f"Neo4j did not start (exit {proc.returncode}); see {self.log_file}\n"
                + (proc.stdout + proc.stderr)[-2000:]
            )
        self.wait_for_bolt(timeout)
        return True

    def stop(self) -> bool:
        """Stop the server. Returns False if it was not running."""
        if not self.is_running():
            return False
        proc = self._launcher(_LAUNCHER, "stop")
        if proc.returncode != 0:
            raise LocalNeo4jError("Neo4j did not stop:\n" + (proc.stdout + proc.stderr)[-2000:])
        return True

    def wait_for_bolt(self, timeout: float) -> None:
        """Poll Bolt with a real query until it answers or `timeout` passes."""
        from neo4j import GraphDatabase
        from neo4j.exceptions import Neo4jError, ServiceUnavailable, SessionExpired

        deadline = time.monotonic() + timeout
        last_error: Exception | None = None
        while time.monotonic() < deadline:
            try:
                with GraphDatabase.driver(
                    self.bolt_uri, auth=("neo4j", self.password), connection_timeout=2.0
                ) as driver:
                    driver.execute_query("RETURN 1", database_="neo4j")
                    return
            except (ServiceUnavailable, SessionExpired, Neo4jError, OSError) as exc:
                last_error = exc
                time.sleep(0.5)
        raise LocalNeo4jError(
            f"Bolt at {self.bolt_uri} did not answer within {timeout:.0f}s "
            f"({type(last_error).__name__}); see {self.log_file}"
        )
