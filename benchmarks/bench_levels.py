"""The cost of judging: a whole fixture run at each level, against replaying the same steps.

    .venv/bin/python benchmarks/bench_levels.py --repeat 5

Runs every bundled fixture on the in-process reference and on the round-only example
(coarsened fixtures, the settled frontier with internal steps) and prints the median wall
time per pass of each path; ratios are within one run (the machine is shared).
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable

from conformance.adapters.in_process import ReferenceAdapter
from conformance.adapters.wire import wire_step
from conformance.fixtures.loading import load_fixtures
from conformance.fixtures.paths import FIXTURES_DIR
from conformance.implementations.shapes import RoundOnly
from conformance.judging.runner import run_fixtures


def replay_only(fixtures: list) -> None:  # type: ignore[type-arg]
    adapter = ReferenceAdapter()
    for f in fixtures:
        adapter.reset(f.config.to_dict())
        for n, fs in enumerate(f.steps):
            adapter.step(wire_step(fs.step, n))


def judged(factory: Callable[[], object], level: str) -> Callable[[list], None]:  # type: ignore[type-arg]
    def run(fixtures: list) -> None:  # type: ignore[type-arg]
        run_fixtures(factory(), "bench", fixtures, level=level)  # type: ignore[arg-type]

    return run


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument(
        "--smoke", action="store_true", help="tiny sizes, seconds (tests/test_benchmarks_smoke.py runs it)"
    )
    args = parser.parse_args()
    fixtures, _ = load_fixtures([FIXTURES_DIR])
    if args.smoke:
        fixtures, args.repeat = fixtures[:10], 1
    paths: list[tuple[str, Callable[[list], None]]] = [  # type: ignore[type-arg]
        ("replay steps only (no judging)", replay_only),
        ("reference, level safety", judged(ReferenceAdapter, "safety")),
        ("reference, level exact (all levels judged)", judged(ReferenceAdapter, "exact")),
        ("round-only example, level settled", judged(RoundOnly, "settled")),
    ]
    base = None
    print(f"{len(fixtures)} fixtures, median of {args.repeat} passes")
    for name, fn in paths:
        times = []
        for _ in range(args.repeat):
            t0 = time.perf_counter()
            fn(fixtures)
            times.append(time.perf_counter() - t0)
        median = statistics.median(times)
        base = base or median
        print(f"{name:45} {median * 1000:8.1f} ms  {median / base:5.1f}x")


if __name__ == "__main__":
    main()
