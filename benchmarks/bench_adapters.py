"""How long one step costs: pure reference, in-process adapter, stdio adapter.

Replays every bundled fixture's steps REPEAT times through each path, in one run, and
reports the time per step and the ratios between them. Usage:

    .venv/bin/python benchmarks/bench_adapters.py [--repeat 20]
"""

from __future__ import annotations

import argparse
import contextlib
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

from tabulate import tabulate

from conformance.fixtures import Fixture, load_fixtures
from conformance.in_process import ReferenceAdapter
from conformance.paths import FIXTURES_DIR
from conformance.stdio import StdioAdapter
from reference_impl import StepRejected, apply

ROOT = Path(__file__).resolve().parents[1]


def pure(fixtures: list[Fixture]) -> int:
    steps = 0
    for fixture in fixtures:
        state = fixture.start()
        for fs in fixture.steps:
            with contextlib.suppress(StepRejected):  # a step the fixture expects refused: the state stays
                state = apply(state, fs.step)
            steps += 1
    return steps


def through(adapter_factory: Callable[[], object]) -> Callable[[list[Fixture]], int]:
    adapter = adapter_factory()

    def run(fixtures: list[Fixture]) -> int:
        steps = 0
        for fixture in fixtures:
            adapter.reset(fixture.config.to_dict(), fixture.initial)  # type: ignore[attr-defined]
            for fs in fixture.steps:
                adapter.step(fs.do)  # type: ignore[attr-defined]
                steps += 1
        return steps

    run.adapter = adapter  # type: ignore[attr-defined]
    return run


def measure(fn: Callable[[list[Fixture]], int], fixtures: list[Fixture], repeat: int) -> tuple[float, int]:
    fn(fixtures)  # warm up (and start the stdio process)
    samples = []
    steps = 0
    for _ in range(repeat):
        t0 = time.perf_counter()
        steps = fn(fixtures)
        samples.append((time.perf_counter() - t0) / steps)
    return statistics.median(samples), steps


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=20)
    args = parser.parse_args()
    fixtures, problems = load_fixtures([FIXTURES_DIR])
    assert not problems
    stdio = through(lambda: StdioAdapter([sys.executable, str(ROOT / "examples" / "stdio_reference_adapter.py")]))
    paths = [
        ("reference apply (pure)", pure),
        ("in-process adapter (apply + observe + JSON copy)", through(ReferenceAdapter)),
        ("stdio adapter (example, one process)", stdio),
    ]
    rows = []
    base = None
    for name, fn in paths:
        per_step, steps = measure(fn, fixtures, args.repeat)
        base = base or per_step
        rows.append([name, f"{per_step * 1e6:.1f}", f"{1 / per_step:,.0f}", f"{per_step / base:.1f}x"])
    stdio.adapter.close()  # type: ignore[attr-defined]
    in_process = float(rows[1][1])
    print(f"{len(fixtures)} fixtures, {steps} steps per pass, median of {args.repeat} passes\n")
    print(tabulate(rows, headers=["path", "us/step", "steps/s", "vs pure"], tablefmt="github"))
    print(
        f"\nstdio overhead per step over in-process: {float(rows[2][1]) - in_process:.1f} us "
        f"({float(rows[2][1]) / in_process:.1f}x)"
    )


if __name__ == "__main__":
    main()
