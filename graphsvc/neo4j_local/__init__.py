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

import hashlib
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


#: Set to `off` to start local servers without the JVM's class archive (`LocalNeo4j.class_archive`).
CLASS_ARCHIVE_ENV = "GRAPHSVC_NEO4J_CLASS_ARCHIVE"


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
    #: False for a throwaway instance: writing the class archive costs its first start ~10 s and its
    #: stop ~20 s, repaid only by the starts after that stop (`class_archive`).
    keeps_class_archive: bool = True

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

    @property
    def class_archive(self) -> Path:
        """This instance's dynamic class-data archive (the JVM's AppCDS) for the JDK and jars in use.

        Why: a starting Neo4j loads and verifies tens of thousands of classes one by one. Mapped from
        an archive, they are loaded ready: measured on 2 cores, interleaved, Bolt answered 12.6-14.1 s
        after a start instead of 17.8-20.1 s. (The first query plans after a start were not measurably
        sooner: that time is the JIT's and the planner's, not class loading.)
        The JVM checks an archive against its own build and the classpath (which names this
        instance's folder, so each instance has its own) and ignores one that does not match; the
        name changes with the JDK and the jars, so a new one is made after either changes."""
        java = Path(self._java()).resolve()
        modules = java.parent.parent / "lib" / "modules"  # the JDK's class image: changes with the JDK
        stamp = (modules if modules.exists() else java).stat().st_mtime_ns
        key = hashlib.sha256(f"{java}|{stamp}|{NEO4J_VERSION}".encode()).hexdigest()[:12]
        return self.home / "jvm" / f"classes-{key}.jsa"

    def _class_archive_wanted(self) -> bool:
        off = os.environ.get(CLASS_ARCHIVE_ENV, "on").strip().lower() in ("off", "0", "false", "no")
        return self.keeps_class_archive and not off

    def _class_archive_line(self) -> str:
        """The neo4j.conf line that maps the class archive, or that has the JVM write it on exit when
        there is none yet (a `stop` keeps it: `_keep_class_archive`). Archives of another JDK or other
        jars, and a write cut short, are removed."""
        if not self._class_archive_wanted():
            return "# no class archive (a throwaway instance, or GRAPHSVC_NEO4J_CLASS_ARCHIVE=off)"
        archive = self.class_archive
        archive.parent.mkdir(parents=True, exist_ok=True)
        for other in archive.parent.glob("classes-*"):
            if other != archive:
                other.unlink(missing_ok=True)
        if archive.is_file() and archive.stat().st_size > 0:
            return f"server.jvm.additional=-XX:SharedArchiveFile={archive}"
        # Written when the JVM exits; kept only after a clean stop, so a JVM killed while
        # writing it leaves nothing a later start would map.
        return f"server.jvm.additional=-XX:ArchiveClassesAtExit={archive}.tmp"

    def _keep_class_archive(self) -> None:
        """After a clean stop: the archive the JVM wrote on exit becomes the one later starts map."""
        if not self._class_archive_wanted():
            return
        archive = self.class_archive
        written = archive.with_name(archive.name + ".tmp")
        if written.is_file() and written.stat().st_size > 0:
            written.replace(archive)

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
            heap=self.heap, pagecache=self.pagecache, class_archive=self._class_archive_line(),
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
        self._keep_class_archive()
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
