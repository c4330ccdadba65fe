"""Entry point of the locally built Neo4j image: write neo4j.conf from the environment, set the
initial password once, then run the server in the foreground through Neo4j's own launcher
(`Neo4jCommand console`, what the distribution's `bin/neo4j console` runs).

Configuration follows the official image: NEO4J_AUTH=neo4j/<password> (or `none`), and every
NEO4J_<name> variable becomes a setting, `_` -> `.` and `__` -> `_`
(NEO4J_server_bolt_listen__address -> server.bolt.listen_address).
"""

import os
import sys
from pathlib import Path

HOME = Path(os.environ.get("NEO4J_HOME", "/var/lib/neo4j"))
CLASSPATH = "/opt/neo4j/lib/*"
NOT_SETTINGS = {"NEO4J_AUTH", "NEO4J_HOME", "NEO4J_CONF"}

DEFAULTS = {
    "server.directories.data": "/data",
    "server.directories.logs": "/logs",
    "server.default_listen_address": "0.0.0.0",
    "server.https.enabled": "false",
    "server.bolt.tls_level": "DISABLED",
    "server.memory.heap.initial_size": "512m",
    "server.memory.heap.max_size": "512m",
    "server.memory.pagecache.size": "256m",
    "dbms.usage_report.enabled": "false",
    "client.allow_telemetry": "false",
    "db.tx_log.rotation.retention_policy": "2 files",
    "server.logs.gc.enabled": "false",
}
# The JVM flags of the official distribution's default neo4j.conf (as graphsvc/neo4j_local uses).
JVM_FLAGS = [
    "-XX:+UseG1GC", "-XX:-OmitStackTraceInFastThrow", "-XX:+UnlockExperimentalVMOptions",
    "-XX:+TrustFinalNonStaticFields", "-XX:+DisableExplicitGC", "-Djdk.nio.maxCachedBufferSize=1024",
    "-Dio.netty.tryReflectionSetAccessible=true", "-Djdk.tls.ephemeralDHKeySize=2048",
    "-Djdk.tls.rejectClientInitiatedRenegotiation=true", "--add-opens=java.base/java.nio=ALL-UNNAMED",
    "--add-opens=java.base/java.io=ALL-UNNAMED", "--add-opens=java.base/sun.nio.ch=ALL-UNNAMED",
    "-Dlog4j2.disable.jmx=true",
]


def setting_name(variable: str) -> str:
    return variable[len("NEO4J_"):].replace("__", "\0").replace("_", ".").replace("\0", "_")


def settings() -> dict[str, str]:
    conf = dict(DEFAULTS)
    for variable, value in os.environ.items():
        if variable.startswith("NEO4J_") and variable not in NOT_SETTINGS:
            conf[setting_name(variable)] = value
    auth = os.environ.get("NEO4J_AUTH", "")
    conf["dbms.security.auth_enabled"] = "false" if auth == "none" else "true"
    return conf


def java(*args: str) -> list[str]:
    return ["java", "-cp", CLASSPATH, *args]


def main() -> None:
    conf_dir = HOME / "conf"
    conf_dir.mkdir(parents=True, exist_ok=True)
    for sub in ("run", "plugins", "import", "licenses"):
        (HOME / sub).mkdir(exist_ok=True)
    lib = HOME / "lib"
    if not lib.exists():
        lib.symlink_to("/opt/neo4j/lib", target_is_directory=True)
    lines = [f"{name}={value}" for name, value in settings().items()]
    lines += [f"server.jvm.additional={flag}" for flag in JVM_FLAGS]
    (conf_dir / "neo4j.conf").write_text("\n".join(lines) + "\n")
    os.environ["NEO4J_CONF"] = str(conf_dir)

    auth = os.environ.get("NEO4J_AUTH", "")
    marker = Path(settings()["server.directories.data"]) / ".graphsvc-password-set"
    if auth and auth != "none" and not marker.exists():
        user, _, password = auth.partition("/")
        if user != "neo4j" or not password:
            sys.exit("NEO4J_AUTH must be neo4j/<password> or none")
        import subprocess

        done = subprocess.run(java("org.neo4j.server.startup.Neo4jAdminCommand",
                                   "dbms", "set-initial-password", password))
        if done.returncode != 0:
            sys.exit(f"could not set the initial password (exit {done.returncode})")
        marker.parent.mkdir(parents=True, exist_ok=True)
        marker.write_text("set\n")
    print("Starting Neo4j (locally built image).", flush=True)
    os.execvp("java", java("org.neo4j.server.startup.Neo4jCommand", "console"))


if __name__ == "__main__":
    main()
