"""`graphsvc watch bootstrap|digest`: print each new pack of a scope as it arrives (SPEC §13).

It is a client of a running service's HTTP API (POST /v1/memory_<pack>/watch), not a service of
its own: the service's one poller per process already watches Neo4j, so any number of hooks and
terminals cost one long poll each, and a hook needs nothing but the service's address (and, with
auth on, a token) - no Neo4j credentials. The first pack is printed at once, then each pack that
differs from the last one printed: one canonical JSON line each (the exact HTTP body), flushed,
so `graphsvc watch ... | while read -r pack; do ...; done` runs once per change.

A 503 (Neo4j unavailable, the service restarting) or a refused connection is retried after its
Retry-After (at most MAX_PAUSE s) with a note on stderr; a 4xx is the caller's to fix: one line on
stderr and exit status 2.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import urllib.error
import urllib.request
from typing import Any

from graphsvc.errors import BadRequest
from graphsvc.surfaces.commands import bootstrap as bootstrap_command
from graphsvc.surfaces.commands import digest as digest_command

#: Seconds a retry waits at most, whatever Retry-After says.
MAX_PAUSE = 30.0
#: Seconds the HTTP read may take beyond wait_s: the pack's own computation and the network.
READ_MARGIN = 30.0


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser("watch", help="print each new pack of a scope as it arrives (a running service's "
                            "POST /v1/memory_<pack>/watch)")
    parser.add_argument("pack", choices=("bootstrap", "digest"), help="which pack to watch")
    parser.add_argument("--url", default=None,
                        help="the service's base URL (default GRAPHSVC_URL, else http://127.0.0.1:GRAPHSVC_PORT, "
                        "port 8080); with auth on, the bearer token is GRAPHSVC_API_TOKEN (an API key works too)")
    parser.add_argument("--project-id", default=None, help="exact project fence")
    parser.add_argument("--project-prefix", default=None, help="subtree fence: 'nott' covers nott and nott/x")
    parser.add_argument("--terms", nargs="*", default=None, metavar="TERM", help="bootstrap only: raw terms")
    parser.add_argument("--newest", type=int, default=None, help="digest only: newest live capsules (0-20)")
    parser.add_argument("--token-budget", type=int, default=None, help="token budget for the whole pack")
    parser.add_argument("--agent", default=None,
                        help="the agent whose claims come first; others' held work leaves the ready set (SPEC §12)")
    parser.add_argument("--wait-s", type=int, default=30,
                        help="seconds each long poll waits before asking again (1-60, default 30)")
    parser.add_argument("--count", type=int, default=None,
                        help="exit after printing this many packs (default: run until interrupted)")
    parser.set_defaults(func=run)


def base_url(args: argparse.Namespace) -> str:
    if args.url:
        return args.url.rstrip("/")
    if os.environ.get("GRAPHSVC_URL"):
        return os.environ["GRAPHSVC_URL"].rstrip("/")
    return f"http://127.0.0.1:{os.environ.get('GRAPHSVC_PORT') or 8080}"


def request_body(args: argparse.Namespace) -> dict[str, Any]:
    if args.pack == "bootstrap":
        if args.newest is not None:
            raise BadRequest("--newest belongs to digest; bootstrap takes --terms", field="newest")
        return bootstrap_command.request_body(args)
    if args.terms is not None:
        raise BadRequest("--terms belongs to bootstrap; digest takes --newest", field="terms")
    return digest_command.request_body(args)


def _post(url: str, body: dict[str, Any], timeout: float) -> tuple[int, dict[str, str], bytes]:
    headers = {"content-type": "application/json"}
    token = os.environ.get("GRAPHSVC_API_TOKEN")
    if token:
        headers["authorization"] = f"Bearer {token}"
    request = urllib.request.Request(url, data=json.dumps(body).encode("utf-8"), headers=headers, method="POST")
    try:
        with urllib.request.urlopen(request, timeout=timeout) as answer:
            return answer.status, dict(answer.headers.items()), answer.read()
    except urllib.error.HTTPError as exc:  # 304 and every error status arrive here
        return exc.code, dict(exc.headers.items()), exc.read()


def _pause(headers: dict[str, str]) -> float:
    try:
        return min(max(float(headers.get("Retry-After", "1")), 0.1), MAX_PAUSE)
    except ValueError:
        return 1.0


def run(args: argparse.Namespace) -> int:
    if not 1 <= args.wait_s <= 60:
        raise BadRequest("--wait-s must be 1-60 seconds", field="wait_s")
    if args.count is not None and args.count < 1:
        raise BadRequest("--count must be at least 1", field="count")
    url = f"{base_url(args)}/v1/memory_{args.pack}/watch"
    body = request_body(args)
    etag: str | None = None
    printed = 0
    while args.count is None or printed < args.count:
        try:
            status, headers, content = _post(url, {**body, **({"etag": etag} if etag else {}), "wait_s": args.wait_s},
                                             args.wait_s + READ_MARGIN)
        except (urllib.error.URLError, OSError) as exc:
            reason = getattr(exc, "reason", exc)
            print(f"graphsvc watch: {url} did not answer ({reason}); retrying in 1 s", file=sys.stderr)
            time.sleep(1.0)
            continue
        if status == 200:
            etag = headers.get("ETag") or headers.get("etag")
            sys.stdout.write(content.decode("utf-8") + "\n")
            sys.stdout.flush()
            printed += 1
        elif status == 304:
            continue
        elif status == 503:
            pause = _pause(headers)
            print(f"graphsvc watch: the service is unavailable ({_message(content)}); retrying in {pause:g} s",
                  file=sys.stderr)
            time.sleep(pause)
        else:
            print(f"graphsvc: watch refused ({status}): {_message(content)}", file=sys.stderr)
            return 2
    return 0


def _message(content: bytes) -> str:
    try:
        error = json.loads(content)["error"]
        return error["message"] + (f" (field: {error['field']})" if error.get("field") else "")
    except (ValueError, KeyError, TypeError):
        return content[:200].decode("utf-8", "replace") or "no body"
