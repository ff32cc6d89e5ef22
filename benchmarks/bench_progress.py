"""The progress property on the reference at scale: N random runs per generation, each
ended by the fair suffix (conformance/judging/progress.py), every finding printed.

Usage (from the repository root):

    .venv/bin/python benchmarks/bench_progress.py --runs 10000 --seed 0

Each run draws a config and up to ``--steps`` steps as ``kconform fuzz`` does
(``distribution.draw_config``, ``swarm``, ``draw_steps`` without refused steps), seeded by
``(seed, generation, run number)``, so one run is reproduced alone with ``--only N``. The
suffix is then driven through ``ReferenceAdapter`` on the run's last observation. Prints per
generation: runs, findings per property, the rounds used (most and histogram), the smallest
slack to the bound (PROGRESS-BOUND), suffix steps, and the time. Exit code 1 if any run has
a finding.
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from collections import Counter

from conformance.adapters.in_process import ReferenceAdapter
from conformance.judging.progress import FairSuffix, Outcome, drive
from conformance.search.distribution import WEIGHTS, RandomChooser, draw_config, draw_steps, swarm
from reference_impl import STEP_TYPES, Generation, State, apply, initial_state, observe


def prefix(generation: Generation, seed: int, number: int, steps: int) -> State:
    chooser = RandomChooser(random.Random(f"{seed}-{generation.value}-{number}"))
    state = initial_state(draw_config(chooser, generation))
    weights = swarm(chooser, WEIGHTS)
    for _ in range(steps):
        batch = draw_steps(chooser, state, weights, refused=False)
        if not batch:
            break
        for step in batch:
            state = apply(state, step)
    return state


def suffix(state: State) -> Outcome:
    adapter = ReferenceAdapter()
    adapter.state = state
    return drive(adapter.step, FairSuffix(state.config, STEP_TYPES), observe(state))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10000, help="runs per generation")
    parser.add_argument("--steps", type=int, default=30, help="steps per random run before the suffix")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--generation", choices=[g.value for g in Generation], action="append")
    parser.add_argument("--only", type=int, help="run only this run number (to reproduce one)")
    parser.add_argument(
        "--smoke", action="store_true", help="5 runs of 10 steps per generation: seconds (tests run it)"
    )
    args = parser.parse_args()
    if args.smoke:
        args.runs, args.steps = 5, 10
    generations = [Generation(g) for g in args.generation] if args.generation else list(Generation)
    failed = 0
    for generation in generations:
        started = time.perf_counter()
        numbers = [args.only] if args.only is not None else range(args.runs)
        rounds: Counter[int] = Counter()
        findings: Counter[str] = Counter()
        slack, steps = None, 0
        for number in numbers:
            outcome = suffix(prefix(generation, args.seed, number, args.steps))
            rounds[outcome.rounds] += 1
            steps += outcome.steps
            gap = outcome.bound - outcome.rounds
            slack = gap if slack is None else min(slack, gap)
            for finding in outcome.findings:
                findings[finding.property] += 1
                print(f"{generation.value} run {number}: {finding}", file=sys.stderr)
            failed += bool(outcome.findings)
        seconds = time.perf_counter() - started
        histogram = " ".join(f"{r}:{n}" for r, n in sorted(rounds.items()))
        print(
            f"{generation.value:16} {len(numbers)} runs, findings {dict(findings) or 0}, rounds used {histogram} "
            f"(most {max(rounds)}, smallest slack to the bound {slack}), {steps} suffix steps, {seconds:.1f} s"
        )
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
