"""What checking an API key costs per request, at 1,000 keys (issue 27's target: <= 0.5 ms p50).

    python -m bench.key_check [--keys 1000] [--requests 20000] [--keep]

Creates `--keys` keys (graphsvc.store.keys, one write each), then times the auth path a request
takes (graphsvc.keyring.KeyRing, what the HTTP middleware calls) for keys drawn at random:

* `hit`: the key's lookup is cached (within its 1 s): parse, salted SHA-256, constant-time compare;
* `miss`: the cache has expired: the same plus one `keys/by_id` read from Neo4j;
* `mixed`: requests in the order they come, the cache expiring on the wall clock as it does in a
  worker (each key is looked up again at most once a second).

Prints p50 / p95 / p99 in milliseconds for each. Uses the `bench` instance unless NEO4J_URI is set;
the keys are deleted at the end unless --keep (the capsules are never touched).
"""

from __future__ import annotations

import argparse
import random
import statistics
import time

from graphsvc.clock import system_clock
from graphsvc.keyring import KeyRing
from graphsvc.store.db import run
from graphsvc.store.keys import create_key

from .target import bench_database


def _percentiles(seconds: list[float]) -> str:
    ms = sorted(s * 1000 for s in seconds)
    pick = lambda q: ms[min(len(ms) - 1, int(q * len(ms)))]  # noqa: E731
    return f"p50 {statistics.median(ms):.4f} ms  p95 {pick(0.95):.4f} ms  p99 {pick(0.99):.4f} ms  (n={len(ms)})"


def _timed(ring: KeyRing, tokens: list[bytes], count: int, rng: random.Random, before=None) -> list[float]:
    taken = []
    for _ in range(count):
        token = rng.choice(tokens)
        if before is not None:
            before()
        began = time.perf_counter()
        ring.authenticate(token, None)
        taken.append(time.perf_counter() - began)
    return taken


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--keys", type=int, default=1000)
    parser.add_argument("--requests", type=int, default=20_000)
    parser.add_argument("--keep", action="store_true", help="leave the bench's keys in the store")
    args = parser.parse_args()
    db = bench_database(timeout=600.0)
    rng = random.Random(27)
    try:
        db.apply_schema()
        made = [create_key(db, f"bench-{n}", "read", [f"p{n % 40:02d}"], system_clock()) for n in range(args.keys)]
        tokens = [key["key"].encode() for key in made]
        ring = KeyRing(db, system_clock)
        for token in tokens:  # every key used once: last_used_at written, as in a running worker
            ring.authenticate(token, None)
        print(f"{args.keys} keys")
        print("hit   ", _percentiles(_timed(ring, tokens, args.requests, rng)))
        print("miss  ", _percentiles(_timed(ring, tokens, min(args.requests, 5000), rng, before=ring._cache.clear)))
        mixed = KeyRing(db, system_clock)
        print("mixed ", _percentiles(_timed(mixed, tokens, args.requests, rng)))
    finally:
        if not args.keep:
            db.write(lambda tx: run(tx, "bench/delete_keys", label_prefix="bench-"))
        db.close()


if __name__ == "__main__":
    main()
