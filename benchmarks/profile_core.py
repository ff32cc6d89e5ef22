"""Where a mixed step's time goes: per step kind, and per function (cProfile).

Usage (from the repository root; the workloads are ``bench_core.py``'s, made the same way):

    .venv/bin/python benchmarks/profile_core.py            # 200 mixed 50-step traces
    .venv/bin/python benchmarks/profile_core.py --top 25

Prints three tables: the best CPU time per step of ``apply`` alone, of ``apply`` with
``invariants.check`` after every step, and of ``apply`` with every action replaced by
one that does nothing (what opening and freezing a draft costs); then ``apply`` and
``check`` per step kind (each step's best wall time over the passes, timer calls
included); then the functions with the most own time under
cProfile (which inflates call-heavy code: read it for the shape, not for the sums).
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))


def main() -> None:
    parser = argparse.ArgumentParser(description="Profile the reference core on the mixed workload.")
    parser.add_argument("--traces", type=int, default=200)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--top", type=int, default=20)
    parser.add_argument(
        "--workload",
        choices=["mixed", "generated"],
        default="mixed",
        help="mixed: random 50-step traces; generated: the corpus generator's default shape mix, from a fresh "
        "partition (default mixed)",
    )
    parser.add_argument("--smoke", action="store_true", help="5 traces, one pass, top 5: seconds (tests run it)")
    args = parser.parse_args()
    if args.smoke:
        args.traces, args.repeat, args.top = 5, 1, 5

    from bench_core import replay_runs
    from tabulate import tabulate
    from workloads import generated_traces, mixed_traces

    from reference_impl import apply, check, config_from_dict, initial_state, step_from_dict
    from reference_impl.apply import ACTIONS

    runs: list[tuple[Any, list[Any]]] = [
        (config_from_dict(t["config"]), [step_from_dict(s) for s in t["steps"]])
        for t in (
            mixed_traces(args.traces) if args.workload == "mixed" else generated_traces(args.traces, with_initial=False)
        )
    ]

    def replay(checked: bool) -> int:
        return replay_runs(runs, checked)

    def best(checked: bool) -> float:
        out = float("inf")
        for _ in range(args.repeat):
            t0 = time.process_time()
            steps = replay(checked)
            out = min(out, (time.process_time() - t0) / steps)
        return out

    pure, checked = best(False), best(True)
    saved = dict(ACTIONS)
    try:
        for kind in ACTIONS:
            ACTIONS[kind] = lambda d, *arguments: None
        fixed = best(False)
    finally:
        ACTIONS.update(saved)
    print(
        tabulate(
            [
                ["apply (pure)", f"{pure * 1e6:.2f}"],
                ["apply + check (checked)", f"{checked * 1e6:.2f}"],
                ["of which check", f"{(checked - pure) * 1e6:.2f}"],
                ["apply with actions that do nothing", f"{fixed * 1e6:.2f}"],
            ],
            headers=[f"{args.workload} traces", "µs/step (CPU)"],
            tablefmt="github",
        )
    )

    # per step: the best of ``repeat`` straight passes (a single pass is too noisy)
    kinds = [step.kind for _, trace in runs for step in trace]
    best_apply = [float("inf")] * len(kinds)
    best_check = [float("inf")] * len(kinds)
    for _ in range(args.repeat):
        i = 0
        for config, trace in runs:
            state = initial_state(config)
            check(state)
            for step in trace:
                t0 = time.perf_counter()
                after = apply(state, step)
                t1 = time.perf_counter()
                check(after, state)
                t2 = time.perf_counter()
                best_apply[i] = min(best_apply[i], t1 - t0)
                best_check[i] = min(best_check[i], t2 - t1)
                state = after
                i += 1
    count: Counter[str] = Counter(kinds)
    applied: Counter[str] = Counter()
    checking: Counter[str] = Counter()
    for kind, a, c in zip(kinds, best_apply, best_check, strict=True):
        applied[kind] += a
        checking[kind] += c
    total = sum(applied.values())
    rows = [
        [
            kind,
            count[kind],
            f"{applied[kind] / count[kind] * 1e6:.1f}",
            f"{applied[kind] / total:.0%}",
            f"{checking[kind] / count[kind] * 1e6:.1f}",
        ]
        for kind in sorted(count, key=lambda k: -applied[k])
    ]
    print()
    print(tabulate(rows, headers=["step kind", "steps", "apply µs", "share of apply", "check µs"], tablefmt="github"))

    profile = cProfile.Profile()
    profile.enable()
    replay(True)
    profile.disable()
    stats = pstats.Stats(profile)
    calls = sum(entry[1] for entry in stats.stats.values())  # type: ignore[attr-defined]
    steps = sum(len(trace) for _, trace in runs)
    print(f"\ncProfile, checked: {calls / steps:.0f} function calls per step; most own time:\n")
    stats.sort_stats("tottime").print_stats(args.top)


if __name__ == "__main__":
    main()
