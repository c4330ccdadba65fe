"""`graphsvc serve`: the HTTP JSON API (and the MCP endpoint at /mcp) with uvicorn, in N workers.

Workers are uvicorn's own (its `Multiprocess` supervisor): a supervisor process spawns N worker
processes, restarts one that dies, and stops them all on SIGINT/SIGTERM. Each worker listens on a
socket of its own bound with SO_REUSEPORT (graphsvc.surfaces.listeners), so the kernel spreads
connections over the workers; where the platform has no SO_REUSEPORT they share one socket, as
`uvicorn.run(..., workers=N)` does. Chosen over gunicorn + UvicornWorker because it is the server already in use
(no new dependency, one set of options and logs), it runs wherever uvicorn runs, and graphsvc
needs nothing gunicorn adds on top (its pre-fork hooks, graceful-timeout tuning, worker classes).
The workers are stateless: each has its own driver; ids come from the one counter in Neo4j.

With more than one worker, `/metrics` must merge every worker's values, or a scrape would show
whichever worker answered it. Unless the operator chose a directory (PROMETHEUS_MULTIPROC_DIR),
`serve` makes a fresh one for this run, hands it to the workers through their environment, and
removes it when the workers have stopped.
"""

from __future__ import annotations

import argparse
import logging
import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from graphsvc.surfaces.http.asgi import LOOPBACK_HOSTS
from graphsvc.surfaces.listeners import PerWorkerSocket, reserve, reuse_port_available

__all__ = ["LOOPBACK_HOSTS", "register", "run"]


def _workers(text: str) -> int:
    from graphsvc.config import worker_count

    try:
        return worker_count(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


@contextmanager
def shared_metrics_dir(workers: int) -> Iterator[None]:
    """Several workers and no PROMETHEUS_MULTIPROC_DIR: a private, empty one for this run."""
    if workers < 2 or os.environ.get("PROMETHEUS_MULTIPROC_DIR") or os.environ.get("prometheus_multiproc_dir"):
        yield
        return
    path = tempfile.mkdtemp(prefix="graphsvc-metrics-")
    os.environ["PROMETHEUS_MULTIPROC_DIR"] = path
    logging.getLogger("graphsvc").info("%d workers share their metrics through %s", workers, path)
    try:
        yield
    finally:
        os.environ.pop("PROMETHEUS_MULTIPROC_DIR", None)
        shutil.rmtree(path, ignore_errors=True)


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser("serve", help="run the HTTP service (GRAPHSVC_HOST/GRAPHSVC_PORT/GRAPHSVC_WORKERS)")
    parser.add_argument("--host", default=None)
    parser.add_argument("--port", type=int, default=None)
    parser.add_argument("--workers", type=_workers, default=None,
                        help="worker processes, a number or auto (one per CPU, at most 8); default GRAPHSVC_WORKERS, "
                        "1. Each is a full, stateless service")
    parser.set_defaults(func=run)


APP = "graphsvc.surfaces.http.asgi:app_from_env"


def serve_workers(config: Any) -> None:
    """uvicorn's supervisor over `config.workers` workers, each listening on a SO_REUSEPORT socket
    of its own. The supervisor's socket (`reserve`) fails a taken port here once (not in every
    worker) and gives port 0 its one number for every worker."""
    from uvicorn.supervisors import Multiprocess

    reserved = reserve(config.host, config.port)
    try:
        config.port = reserved.getsockname()[1]
        Multiprocess(config, sockets=[PerWorkerSocket(config.host, config.port)]).run()  # type: ignore[list-item]
    except KeyboardInterrupt:
        pass
    finally:
        reserved.close()


def run(args: argparse.Namespace) -> int:
    import uvicorn

    from graphsvc.config import get_settings
    from graphsvc.logs import configure_logging

    # Worker processes (and the one app of a single-process run) read their settings from the
    # environment, so the flags go there first: each worker admits its share of
    # GRAPHSVC_MAX_INFLIGHT, so it must see the count `--workers` asked for.
    if args.host:
        os.environ["GRAPHSVC_HOST"] = args.host
    if args.port:
        os.environ["GRAPHSVC_PORT"] = str(args.port)
    if args.workers:
        os.environ["GRAPHSVC_WORKERS"] = str(args.workers)
    get_settings.cache_clear()
    settings = get_settings()
    workers = settings.graphsvc_workers
    configure_logging(settings.graphsvc_log_level, settings.graphsvc_log_format)  # the supervisor's own lines
    options: dict[str, Any] = dict(
        factory=True,
        host=settings.graphsvc_host,
        port=settings.graphsvc_port,
        workers=workers,
        log_level=settings.graphsvc_log_level.lower(),
        # graphsvc.logs configured the root logger (text or JSON, request ids); uvicorn's loggers
        # propagate to it. Its access log is off: it prints query strings (tokens!) verbatim, and
        # graphsvc.surfaces.http.access_log writes a redacted line instead.
        log_config=None,
        access_log=False,
        # SIGTERM: stop accepting, let in-flight requests finish for at most this long, then run
        # the app's shutdown (which closes the driver). Each worker applies it to its own requests.
        timeout_graceful_shutdown=settings.graphsvc_shutdown_grace_s,
    )
    with shared_metrics_dir(workers):
        if workers > 1 and reuse_port_available():
            serve_workers(uvicorn.Config(APP, **options))
        else:
            uvicorn.run(APP, **options)
    return 0
