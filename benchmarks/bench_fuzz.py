"""The speed of ``kconform fuzz`` and how fast it finds KIP-101's data loss.

Figures, from one run:

1. ``fuzz``: steps/s of ``fuzz()`` against the in-process reference (every generation,
   ``--examples`` runs of 30 steps, seed 0), per CPU second and per wall second; with
   ``--baseline REV`` the same figure for that revision (checked out into a temporary git
   worktree, measured in its own process), alternating for ``--rounds`` rounds, best kept;
2. ``floor``: the reference alone over the very steps the fuzzer took (``apply`` and
   ``observe``, nothing judged): what a step costs before any harness work;
3. ``kip101``: ``--seeds`` seeds of ``kconform fuzz --impl reference --generation
   hw-truncation``: seconds until the shrunk AckedNotLost witness (KIP-101's data loss)
   was ready and its length.

    .venv/bin/python benchmarks/bench_fuzz.py --examples 100 --rounds 2 --baseline 103febc --seeds 10
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent

WORKER = """
import json, sys, time
from conformance.adapters.in_process import ReferenceAdapter
from conformance.search.stateful import fuzz
from reference_impl import Generation, apply, initial_state, observe, step_from_dict

count = 0
taken = []

class Counting(ReferenceAdapter):
    trusted = shares_observations = True  # the reference, counted (a subclass says so)

    def reset(self, config, initial=None):
        taken.append((config, initial, []))
        super().reset(config, initial)

    def step(self, step):
        global count
        count += 1
        taken[-1][2].append(step)
        return super().step(step)

examples = int(sys.argv[1])
wall, cpu = time.perf_counter(), time.process_time()
for generation in Generation:
    if fuzz(Counting(), generation, examples=examples, steps=30, derandomize=True) is not None:
        raise SystemExit("fuzz found a disagreement of the reference with itself")
wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
from reference_impl import config_from_dict, StepRejected
from reference_impl.given import given_state
runs = [(config_from_dict({k: v for k, v in c.items() if v is not None}), i, [step_from_dict(s) for s in steps])
        for c, i, steps in taken]
floor = time.process_time()
n = 0
for config, initial, steps in runs:
    state = given_state(config, initial) if initial is not None else initial_state(config)
    for step in steps:
        try:
            state = apply(state, step)
        except StepRejected:
            pass
        observe(state)
        n += 1
floor = time.process_time() - floor
print(json.dumps({"steps": count, "wall": wall, "cpu": cpu, "floor_steps": n, "floor_cpu": floor}))
"""


def measure(tree: Path, examples: int) -> dict[str, Any]:
    env = {**os.environ, "PYTHONPATH": str(tree)}
    out = subprocess.run(
        [sys.executable, "-c", WORKER, str(examples)], cwd=tree, env=env, capture_output=True, text=True, check=True
    )
    return dict(json.loads(out.stdout.strip().splitlines()[-1]))


def kip101(seeds: int, examples: int) -> list[tuple[int, float, float, int] | tuple[int, None, None, None]]:
    from conformance.adapters.in_process import ReferenceAdapter
    from conformance.search.stateful import fuzz_all
    from reference_impl import Generation

    out: list[tuple[int, float, float, int] | tuple[int, None, None, None]] = []
    for seed in range(seeds):
        report = fuzz_all(ReferenceAdapter(), Generation.HW_TRUNCATION, examples=examples, seed=seed)
        loss = next((f for f in report.findings if f.invariant == "AckedNotLost"), None)
        out.append((seed, loss.seconds, loss.cpu_seconds, len(loss.path)) if loss else (seed, None, None, None))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--examples", type=int, default=100, help="fuzz runs per generation (0: skip the speed figure; default: 100)"
    )
    parser.add_argument("--rounds", type=int, default=2, help="alternating rounds; the best is kept (default: 2)")
    parser.add_argument("--baseline", help="a git revision to compare with (e.g. main before issue 11)")
    parser.add_argument("--seeds", type=int, default=10, help="seeds for the KIP-101 figure (0: skip; default: 10)")
    parser.add_argument("--kip101-examples", type=int, default=2000, help="runs per seed (default: 2000)")
    parser.add_argument(
        "--smoke", action="store_true", help="tiny sizes, seconds (tests/test_benchmarks_smoke.py runs it)"
    )
    args = parser.parse_args()
    if args.smoke:
        args.examples, args.rounds, args.baseline, args.seeds, args.kip101_examples = 2, 1, None, 1, 20

    trees = {"current": ROOT} if args.examples else {}
    with tempfile.TemporaryDirectory() as tmp:
        if args.baseline and args.examples:
            base = Path(tmp) / "baseline"
            subprocess.run(["git", "worktree", "add", "--detach", str(base), args.baseline], cwd=ROOT, check=True)
            trees["baseline"] = base
        best: dict[str, dict[str, Any]] = {}
        try:
            for _ in range(args.rounds):
                for name, tree in trees.items():
                    figure = measure(tree, args.examples)
                    if name not in best or figure["cpu"] / figure["steps"] < best[name]["cpu"] / best[name]["steps"]:
                        best[name] = figure
        finally:
            if "baseline" in trees:
                subprocess.run(["git", "worktree", "remove", "--force", str(trees["baseline"])], cwd=ROOT, check=False)
    if best:
        print(f"fuzz: {args.examples} runs x 30 steps per generation, seed 0, best of {args.rounds}")
    for name, f in best.items():
        floor = f["floor_cpu"] / f["floor_steps"]
        per_step = f["cpu"] / f["steps"]
        print(
            f"  {name:9} {f['steps']:6} steps  {f['steps'] / f['cpu']:7,.0f} steps/CPU-s  "
            f"{f['steps'] / f['wall']:7,.0f} steps/wall-s  floor {1 / floor:7,.0f} steps/CPU-s  "
            f"fuzz/floor {per_step / floor:4.1f}x"
        )
    if "baseline" in best:
        ratio = (best["baseline"]["cpu"] / best["baseline"]["steps"]) / (
            best["current"]["cpu"] / best["current"]["steps"]
        )
        print(f"  current is {ratio:.1f}x the baseline's steps per CPU second")
    if args.seeds:
        found = kip101(args.seeds, args.kip101_examples)
        print(f"kip101: hw-truncation, AckedNotLost, {args.kip101_examples} runs per seed")
        for seed, seconds, cpu, length in found:
            print(
                f"  seed {seed}: "
                + (f"{seconds:5.1f} s wall, {cpu:5.1f} s CPU, {length} steps" if seconds is not None else "not found")
            )
        times = [s for _, s, _, _ in found if s is not None]
        cpus = [c for _, _, c, _ in found if c is not None]
        lengths = [n for _, _, _, n in found if n is not None]
        if times:
            print(
                f"  found {len(times)}/{len(found)}; median {statistics.median(times):.1f} s wall, "
                f"{statistics.median(cpus):.1f} s CPU; median length {statistics.median(lengths):g}, "
                f"longest {max(lengths)}"
            )


if __name__ == "__main__":
    main()
