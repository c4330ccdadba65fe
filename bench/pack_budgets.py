"""What a pack costs as its token budget grows, on the store the bench Neo4j holds now.

    python -m bench.pack_budgets [--budgets 0 1500 3000 20000 50000 100000] [--calls 7] [--terms deploy cache]
                                 [--project-id P]

Reads whatever store the bench Neo4j holds (it writes and wipes nothing), e.g. the one a
`python -m bench.mixed --seconds 60 --wipe` run leaves: its ingests are ~16 % constraints, so large
budgets meet more constraints than they can show, the case bench.dataset's 1 % does not reach.

For each budget, without and with `--terms`, in-process (no HTTP), median of `--calls` after one
untimed call:
  read   the pack's read transaction alone (graphsvc.store.bootstrap.read_sections)
  pack   GraphService.bootstrap, the read plus ranking, the budget fill and rendering
and the constraints the read shipped against those the pack shows, with the fence's total.

To compare two trees on one store, run it once per tree with that tree first on PYTHONPATH
(`PYTHONPATH=<other tree> python -m bench.pack_budgets`), alternately.
"""

from __future__ import annotations

import argparse
import statistics
import time
from datetime import datetime, timezone
from typing import Any, Callable

from graphsvc.clock import fixed_clock
from graphsvc.models import BootstrapRequest
from graphsvc.service import GraphService
from graphsvc.store import bootstrap

from .target import bench_database


def median_ms(work: Callable[[], Any], calls: int) -> float:
    work()
    times = []
    for _ in range(calls):
        start = time.perf_counter()
        work()
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--budgets", type=int, nargs="+", default=[0, 1500, 3000, 20000, 50000, 100000])
    parser.add_argument("--calls", type=int, default=7)
    parser.add_argument("--terms", nargs="+", default=["deploy", "cache"])
    parser.add_argument("--project-id", default=None, help="fence the packs to one project (default: the whole store)")
    args = parser.parse_args()

    db = bench_database()
    now = datetime.now(timezone.utc)
    service = GraphService(db, clock=fixed_clock(now))  # one clock for every call: the same pack each time
    print(f"code: {bootstrap.__file__}")
    print(f"{'terms':>5} {'budget':>7} {'read ms':>8} {'pack ms':>8}  constraints shipped / shown / total")
    try:
        for terms in ([], args.terms):
            for budget in args.budgets:
                body: dict[str, Any] = {"token_budget": budget}
                if terms:
                    body["terms"] = terms
                if args.project_id:
                    body["project_id"] = args.project_id
                request = BootstrapRequest(**body)
                params = bootstrap.statement_parameters(request, now)
                read = lambda: db.read(lambda tx: bootstrap.read_sections(tx, request, params))  # noqa: E731
                sections = read()
                pack = service.bootstrap(body)
                print(f"{len(terms):>5} {budget:>7} {median_ms(read, args.calls):>8.1f} "
                      f"{median_ms(lambda: service.bootstrap(body), args.calls):>8.1f}  "
                      f"{len(sections['constraints'])} / {len(pack.get('constraints', []))} / {sections['constraints_total']}")
    finally:
        db.close()


if __name__ == "__main__":
    main()
