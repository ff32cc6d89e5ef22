"""The cost of ``kconform sensitivity``: the whole zoo against the bundled fixtures.

Reports, from one process and one run of each path:

1. ``reference x N``: the reference adapter over the fixtures, N times (N = zoo size):
   what the zoo would cost if a member were free;
2. ``zoo``: ``sensitivity(MEMBERS, fixtures)``, every member over every fixture (patches
   applied and undone around each step, fixtures of killed members run to the end);

and their ratio: the price of a member over the plain reference.

    .venv/bin/python benchmarks/bench_sensitivity.py --repeat 3
"""

from __future__ import annotations

import argparse
import statistics
import time

from conformance.adapters.in_process import ReferenceAdapter
from conformance.fixtures.loading import load_fixtures
from conformance.fixtures.paths import FIXTURES_DIR
from conformance.judging.runner import reference_trace, run_fixtures
from conformance.search.sensitivity import sensitivity
from conformance.zoo import MEMBERS


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3, help="passes of each path; the best is reported")
    parser.add_argument("--smoke", action="store_true", help="3 members, 5 fixtures, one pass: seconds (tests run it)")
    args = parser.parse_args()
    fixtures, problems = load_fixtures([FIXTURES_DIR])
    if problems:
        raise SystemExit("\n".join(map(str, problems)))
    members = MEMBERS
    if args.smoke:
        fixtures, members, args.repeat = fixtures[:5], MEMBERS[:3], 1
    traces = {f.id: reference_trace(f) for f in fixtures}
    steps = sum(len(f.steps) for f in fixtures)
    reference, zoo = [], []
    for _ in range(args.repeat):
        started = time.perf_counter()
        for _member in members:
            run_fixtures(ReferenceAdapter(), "reference", fixtures, traces)
        reference.append(time.perf_counter() - started)
        started = time.perf_counter()
        result = sensitivity(members, fixtures)
        zoo.append(time.perf_counter() - started)
    print(f"{len(members)} members x {len(fixtures)} fixture cases ({steps} steps each pass); best of {args.repeat}")
    print(f"reference x {len(members)}: {min(reference):6.2f} s  (median {statistics.median(reference):.2f})")
    print(f"zoo:             {min(zoo):6.2f} s  (median {statistics.median(zoo):.2f})")
    print(f"ratio zoo / reference: {min(zoo) / min(reference):.2f}x; kill rate {result.kill_rate:.0%}")


if __name__ == "__main__":
    main()
