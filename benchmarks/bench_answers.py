"""What observing answers as data (OBS-ANSWER-1) costs ``observe``, in one run.

Usage (from the repository root):

    .venv/bin/python benchmarks/bench_answers.py --repeat 7

Replays every bundled fixture on the reference (from its start state, ``initial:``
included) and keeps each state reached. Then times ``observe`` over all of them twice,
alternating: as it is, and with ``observe_answers`` replaced by a constant (what
``observe`` cost before ``answers`` existed). Best of ``--repeat`` each; prints both per
state and their ratio.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from typing import Any

from conformance.fixtures.loading import load_fixtures
from conformance.fixtures.paths import FIXTURES_DIR
from reference_impl import State, StepRejected, apply

OBSERVE = sys.modules["reference_impl.observe"]


def states(limit: int | None = None) -> list[State]:
    fixtures, _ = load_fixtures([FIXTURES_DIR])
    fixtures = fixtures[:limit]
    out = []
    for fixture in fixtures:
        state = fixture.start()
        for fs in fixture.steps:
            try:
                state = apply(state, fs.step)
            except StepRejected:
                continue
            out.append(state)
    return out


def best(fn: Callable[[], Any], repeat: int) -> float:
    fastest = float("inf")
    for _ in range(repeat):
        started = time.perf_counter()
        fn()
        fastest = min(fastest, time.perf_counter() - started)
    return fastest


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument(
        "--smoke", action="store_true", help="tiny sizes, seconds (tests/test_benchmarks_smoke.py runs it)"
    )
    args = parser.parse_args()
    if args.smoke:
        args.repeat = 1
    seen = states(10 if args.smoke else None)
    real = OBSERVE.observe_answers

    def with_answers() -> None:
        for state in seen:
            OBSERVE.observe(state)

    def without_answers() -> None:
        OBSERVE.observe_answers = lambda state: None
        try:
            for state in seen:
                OBSERVE.observe(state)
        finally:
            OBSERVE.observe_answers = real

    times = {"without": float("inf"), "with": float("inf")}
    for _ in range(args.repeat):  # alternate, so load changes hit both alike
        times["without"] = min(times["without"], best(without_answers, 1))
        times["with"] = min(times["with"], best(with_answers, 1))
    per = {k: v * 1e6 / len(seen) for k, v in times.items()}
    print(f"{len(seen)} states from the bundled fixtures")
    print(f"observe without answers: {per['without']:.1f} us/state")
    print(f"observe with answers:    {per['with']:.1f} us/state")
    print(f"ratio: {times['with'] / times['without']:.2f}")


if __name__ == "__main__":
    main()
