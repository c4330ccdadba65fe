"""`graphsvc neo4j start|stop|status`: the project's local Neo4j server."""

from __future__ import annotations

import argparse
import sys
import time

from graphsvc.neo4j_local import INSTANCE_PORTS, LocalNeo4j, LocalNeo4jError


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser("neo4j", help="start, stop or inspect the local Neo4j 5.26 server")
    parser.add_argument("action", choices=["start", "stop", "status", "install"])
    known = ", ".join(f"{name} (Bolt {bolt}, HTTP {http})" for name, (bolt, http) in INSTANCE_PORTS.items())
    parser.add_argument(
        "--instance", default="dev", metavar="{" + "|".join(INSTANCE_PORTS) + "}",
        help=f"which server: {known}; default dev. Another name needs GRAPHSVC_NEO4J_<NAME>_BOLT_PORT and "
        "GRAPHSVC_NEO4J_<NAME>_HTTP_PORT set",
    )
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    try:
        local = LocalNeo4j.checked(args.instance)
        if args.action == "install":
            print(f"Neo4j jars in {local.install()}")
        elif args.action == "start":
            began = time.monotonic()
            started = local.start()
            verb = "started" if started else "already running"
            print(f"Neo4j ({args.instance}) {verb} in {time.monotonic() - began:.1f}s: "
                  f"Bolt {local.bolt_uri}, Browser {local.browser_url}")
            print(f"logs: {local.log_file}")
        elif args.action == "stop":
            print(f"Neo4j ({args.instance}) " + ("stopped" if local.stop() else "was not running"))
        else:
            running = local.is_running()
            print(f"Neo4j ({args.instance}) {'running' if running else 'stopped'}: Bolt {local.bolt_uri}, "
                  f"Browser {local.browser_url}, home {local.home}, logs {local.log_file}")
            return 0 if running else 3
    except LocalNeo4jError as exc:
        print(f"graphsvc neo4j: {exc}", file=sys.stderr)
        return 1
    return 0
