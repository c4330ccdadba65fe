"""The app as uvicorn imports it in every worker process: `graphsvc.surfaces.http.asgi:app_from_env`.

With `--workers N` uvicorn spawns N fresh processes, so the app cannot be handed over as an
object: each worker builds its own from the environment (its own driver and connection pool;
nothing else is kept in a process, which is what makes the workers interchangeable).

GRAPHSVC_MAX_INFLIGHT is the service's, not each worker's: it protects Neo4j, whose capacity does
not grow with the workers, so each of N workers admits its share (`serve` tells them N).
"""

from __future__ import annotations

from starlette.applications import Starlette

from graphsvc.config import worker_share

#: On a loopback bind, /mcp answers only to these Host/Origin names (DNS-rebinding protection).
LOOPBACK_HOSTS = ["127.0.0.1:*", "localhost:*", "[::1]:*"]


def app_from_env() -> Starlette:
    from graphsvc.config import get_settings
    from graphsvc.factory import build_service
    from graphsvc.surfaces.http.app import create_app
    from graphsvc.surfaces.http.auth import configured_token

    settings = get_settings()
    return create_app(
        build_service(settings),
        api_token=configured_token(settings.graphsvc_api_token),
        mcp_allowed_hosts=LOOPBACK_HOSTS if settings.graphsvc_host in ("127.0.0.1", "localhost", "::1") else None,
        metrics_token=configured_token(settings.graphsvc_metrics_token),
        max_inflight=worker_share(settings.graphsvc_max_inflight, settings.graphsvc_workers),
        owns_service=True,
        require_keys=settings.graphsvc_require_keys,
        key_max_inflight=worker_share(settings.graphsvc_key_max_inflight or max(1, settings.graphsvc_max_inflight // 4),
                                        settings.graphsvc_workers),
    )
