"""One listening socket per worker process, so the kernel spreads connections over the workers.

uvicorn's supervisor binds one socket and every worker accepts from it. Whichever worker wakes
first accepts every connection waiting (asyncio accepts up to a hundred per wake-up), so a team's
agents, which open their keep-alive connections together, all land on one worker and the others
idle: with 16 clients and 2 workers one worker took every connection.

With SO_REUSEPORT each worker listens on a socket of its own bound to the same address, and
Linux hands each new connection to one of them by a hash of its addresses: the connections, and
so the load, spread over the workers. uvicorn passes the sockets it is given to each worker
process by pickling them (its workers are spawned), so a `PerWorkerSocket` placed in that list is
rebuilt in each worker as a fresh socket of its own: the supervisor keeps its restarts, health
checks and signal handling unchanged. The supervisor itself holds one socket bound the same way
but never listening: it reserves the address and makes a port already taken fail at start, not
in each worker.
"""

from __future__ import annotations

import socket

__all__ = ["PerWorkerSocket", "reserve", "reuse_port_available", "reuse_port_socket"]


def reuse_port_available() -> bool:
    """Whether this platform spreads connections over SO_REUSEPORT sockets (Linux, the BSDs)."""
    return hasattr(socket, "SO_REUSEPORT")


def reuse_port_socket(host: str, port: int) -> socket.socket:
    """A TCP socket bound to (host, port) with SO_REUSEADDR and SO_REUSEPORT, not yet listening
    (asyncio's server listens on it in the worker)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
        sock.bind((host, port))
    except OSError:
        sock.close()
        raise
    sock.set_inheritable(True)
    return sock


def reserve(host: str, port: int) -> socket.socket:
    """The supervisor's socket: (host, port) checked free, then bound with SO_REUSEPORT, never listening.

    SO_REUSEPORT alone would share a port another SO_REUSEPORT service of the same user listens on
    (a second `graphsvc serve`) and split its connections; a plain bind first fails on any listener
    there (OSError "Address already in use") and gives port 0 its number."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # a restart's TIME_WAIT is not a holder
        probe.bind((host, port))
        port = probe.getsockname()[1]
        return reuse_port_socket(host, port)


class PerWorkerSocket:
    """Stands for "a socket of the worker's own" in the list uvicorn hands each worker.

    Unpickled in the worker as `reuse_port_socket(host, port)`; never used in the supervisor.
    """

    def __init__(self, host: str, port: int) -> None:
        self.host = host
        self.port = port

    def __reduce__(self) -> tuple[object, tuple[str, int]]:
        return reuse_port_socket, (self.host, self.port)
