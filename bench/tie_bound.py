"""How much of a pack's growth with the store is the tie at the coverage cut: a bound for any way of ordering it.

    python -m bench.tie_bound --small bolt://127.0.0.1:7688 --large bolt://127.0.0.1:7689 [--rounds 5]

With terms, every ranked section reads all rows scoring at or above its cut, because a Lucene score
cannot order a tie by recency (cypher/bootstrap/sections_*.cypher). This times the pack's statements
alone (client side, median of `--samples`, in a read transaction as the service runs it) on both stores, and on the large store a
second time with each read after the cut stopped at 50 rows. That copy gives WRONG packs; it only
shows what the statement would cost if the tie were free (it still runs the cut's full-text query,
which scores every match), so it bounds what ordering the tie could win with that query kept. The copy is made from the shipped statement text at run time (one `LIMIT` inserted), so it
follows whatever `cypher/bootstrap/` holds. Both stores must hold this bench's datasets (load them
with bench.bootstrap_latency); nothing is written. NEO4J_USER / NEO4J_PASSWORD / NEO4J_DATABASE
apply to both.
"""

from __future__ import annotations

import argparse
import os
import random
import re
import statistics
import time
from typing import Any

from graphsvc.models import BootstrapRequest
from graphsvc.store import cypher
from graphsvc.store.bootstrap import pack_statements, section_runs, statement_parameters
from graphsvc.store.db import ARGUMENTS, Database

from . import dataset
from .bootstrap_latency import SCENARIOS, reusable
from .term_indexes import rebuild_term_indexes

#: The read after each section's cut, as the shipped statements spell it.
AFTER_THE_CUT = re.compile(r"YIELD node AS c, score\s+WHERE score >= cut")
TIE_ROWS = 50


def tie_capped(text: str) -> str:
    """The statement with every read after the cut stopped at TIE_ROWS rows (wrong packs: a bound only)."""
    capped, reads = AFTER_THE_CUT.subn(f"YIELD node AS c, score WITH c, score LIMIT {TIE_ROWS} WHERE score >= cut", text)
    if reads == 0:
        raise SystemExit("no read after a cut found in the statement: update bench.tie_bound.AFTER_THE_CUT")
    return capped


def pack_ms(db: Database, head: str, sections: str, params: dict[str, Any], samples: int) -> float:
    """Median wall time of `samples` packs (head, then the section statement's runs) after 5 untimed ones."""
    def read(tx: Any) -> None:
        row = tx.run(head, {ARGUMENTS: params}).single().data()
        for arguments in section_runs(params, row):
            tx.run(sections, {ARGUMENTS: arguments}).consume()

    timings = []
    for run_number in range(samples + 5):
        began = time.perf_counter()
        db.read(read)
        if run_number >= 5:
            timings.append((time.perf_counter() - began) * 1000)
    return statistics.median(timings)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--small", required=True, help="Bolt URI of the small store")
    parser.add_argument("--large", required=True, help="Bolt URI of the large store")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--samples", type=int, default=40, help="per scope, store and round")
    parser.add_argument("--rebuild-term-indexes", action="store_true",
                        help="drop and rebuild both stores' full-text term indexes before timing, so the figures "
                        "do not depend on how often their capsules were rewritten (never beside a serving worker)")
    args = parser.parse_args()
    user, password = os.environ.get("NEO4J_USER", "neo4j"), os.environ.get("NEO4J_PASSWORD", "")
    database = os.environ.get("NEO4J_DATABASE", "neo4j")
    words = dataset.vocabulary(random.Random(dataset.SEED))
    terms = [words[17], words[911], words[1703]]
    stores = {side: Database(uri, user, password, database, timeout=60.0, query_timeout=60.0)
              for side, uri in (("small", args.small), ("large", args.large))}
    try:
        for side, db in stores.items():
            if reusable(db, db.query("bench/loaded")[0]["capsules"]) is None:
                raise SystemExit(f"the {side} store does not hold a bench dataset: load it with bench.bootstrap_latency")
        if args.rebuild_term_indexes:
            for side, db in stores.items():
                print(f"rebuilt the {side} store's term indexes in {rebuild_term_indexes(db):.1f} s", flush=True)
        runs: dict[tuple[str, str], list[float]] = {}
        for round_number in range(args.rounds):
            for name, body in SCENARIOS.items():
                request = BootstrapRequest(**({**body, "terms": terms} if "terms" in body else body))
                params = statement_parameters(request, dataset.NOW)
                head, sections = map(cypher.load, pack_statements(request.project_id, request.project_prefix))
                for column, db, statement in (("small", stores["small"], sections), ("large", stores["large"], sections),
                                              ("large, tie capped", stores["large"], tie_capped(sections))):
                    runs.setdefault((name, column), []).append(pack_ms(db, head, statement, params, args.samples))
            print(f"round {round_number + 1}/{args.rounds} done", flush=True)
        print(f"\nscope           small ms   large ms (ratio)   large, tie capped at {TIE_ROWS} (ratio)"
              f"   (median of {args.rounds} rounds)")
        for name in SCENARIOS:
            small, large, capped = (statistics.median(runs[(name, column)])
                                    for column in ("small", "large", "large, tie capped"))
            print(f"{name:<15} {small:>8.2f} {large:>10.2f} ({large / small:.2f}x) {capped:>12.2f} ({capped / small:.2f}x)")
    finally:
        for db in stores.values():
            db.close()


if __name__ == "__main__":
    main()
