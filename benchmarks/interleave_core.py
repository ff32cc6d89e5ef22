"""Several revisions of the reference in one process, their passes interleaved.

Usage (from the repository root):

    .venv/bin/python benchmarks/interleave_core.py 103febc main          # and this checkout
    .venv/bin/python benchmarks/interleave_core.py main --rounds 10 --traces 200

``bench_core.py`` runs each version in a worker process of its own for tens of seconds;
on a machine whose load changes from second to second, the two workers of one round do
not get the same machine, and its figures swing by 10 % between runs. Here every
revision (``git archive`` into a temporary folder) is imported under a package name of
its own (``ref_0``, ``ref_1``, ...; the reference imports itself relatively) beside
this checkout's, and the same mixed traces are replayed by each in turn, pass after
pass, for ``--rounds`` rounds: a change of load hits all of them alike. Each figure is
the best CPU time per step over the rounds; ratios are to the first revision.

The traces are ``workloads.mixed_traces`` drawn from the step kinds every revision
knows, kept only if every revision replays them without a rejection (older rules
differ in places). Figures: ``pure`` (``apply``), ``checked`` (``apply`` then
``check(after, before)``), ``observe`` (``observe`` of every state reached).
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from types import ModuleType
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))


def _load(name: str, folder: Path) -> ModuleType:
    package = folder / "reference_impl"
    spec = importlib.util.spec_from_file_location(
        name, package / "__init__.py", submodule_search_locations=[str(package)]
    )
    if spec is None or spec.loader is None:
        raise SystemExit(f"no reference_impl in {folder}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def _replayable(version: ModuleType, trace: dict[str, Any]) -> tuple[Any, list[Any]] | None:
    try:
        config = version.config_from_dict(trace["config"])
        steps = [version.step_from_dict(s) for s in trace["steps"]]
        state = version.initial_state(config)
        for step in steps:
            state = version.apply(state, step)
    except Exception:  # a rejection by older rules, or a kind it does not know
        return None
    return config, steps


def _per_step(version: ModuleType, runs: list[tuple[Any, list[Any]]], mode: str) -> float:
    apply, check, initial, observe = version.apply, version.check, version.initial_state, version.observe
    steps = 0
    t0 = time.process_time()
    for config, trace in runs:
        state = initial(config)
        if mode == "checked":
            check(state)
        for step in trace:
            after = apply(state, step)
            if mode == "checked":
                check(after, state)
            elif mode == "observe":
                observe(after)
            state = after
            steps += 1
    return (time.process_time() - t0) / steps


def main() -> None:
    parser = argparse.ArgumentParser(description="Interleaved per-step CPU time of several reference revisions.")
    parser.add_argument("revisions", nargs="*", help="git revisions to compare with this checkout")
    parser.add_argument("--rounds", type=int, default=8)
    parser.add_argument("--traces", type=int, default=200, help="traces (default 200)")
    parser.add_argument(
        "--workload",
        choices=["mixed", "generated"],
        default="mixed",
        help="mixed: random 50-step traces; generated: the corpus generator's default shape mix, from a fresh "
        "partition (default mixed)",
    )
    parser.add_argument("--smoke", action="store_true", help="HEAD against this checkout, 5 traces, 1 round: seconds")
    args = parser.parse_args()
    if args.smoke:
        args.revisions, args.rounds, args.traces = args.revisions or ["HEAD"], 1, 5
    if not args.revisions:
        parser.error("name at least one git revision to compare with (or --smoke)")

    from tabulate import tabulate
    from workloads import generated_traces, mixed_traces

    if args.workload == "generated":

        def draw(count: int, seed: int, kinds: frozenset[str]) -> list[dict[str, Any]]:
            return [
                t
                for t in generated_traces(count, seed=seed, with_initial=False)
                if {s["kind"] for s in t["steps"]} <= kinds
            ]

        traces: Any = draw
    else:
        traces = mixed_traces

    names = [*args.revisions, "this checkout"]
    with tempfile.TemporaryDirectory(prefix="kconform-interleave-") as tmp:  # kept: old code imports lazily
        _run(args, names, Path(tmp), tabulate, traces)


def _run(args: argparse.Namespace, names: list[str], tmp: Path, tabulate: Any, mixed_traces: Any) -> None:
    """Load the revisions (archived under ``tmp``), draw the traces, measure, print."""
    folders = []
    for i, revision in enumerate(args.revisions):
        folder = tmp / str(i)
        folder.mkdir()
        archive = subprocess.run(["git", "archive", revision, "reference_impl"], cwd=ROOT, capture_output=True)
        if archive.returncode != 0:
            raise SystemExit(f"git archive {revision}: {archive.stderr.decode().strip()}")
        subprocess.run(["tar", "-x", "-C", str(folder)], input=archive.stdout, check=True)
        folders.append(folder)
    folders.append(ROOT)
    versions = [_load(f"ref_{i}", folder) for i, folder in enumerate(folders)]

    kinds = frozenset.intersection(
        *(frozenset(importlib.import_module(f"{v.__name__}.steps").STEP_TYPES) for v in versions)
    )
    runs: list[list[tuple[Any, list[Any]]]] = [[] for _ in versions]
    drawn, seed = 0, 7
    while len(runs[0]) < args.traces and drawn < 100 * args.traces:
        for trace in mixed_traces(args.traces, seed=seed, kinds=kinds):
            replayed = [_replayable(v, trace) for v in versions]
            if all(r is not None for r in replayed) and len(runs[0]) < args.traces:
                for mine, r in zip(runs, replayed, strict=True):
                    mine.append(r)  # type: ignore[arg-type]
        drawn += args.traces
        seed += 1

    modes = ("pure", "checked", "observe")
    best = {(i, mode): float("inf") for i in range(len(versions)) for mode in modes}
    for r in range(args.rounds):
        for mode in modes:
            order = range(len(versions)) if r % 2 else reversed(range(len(versions)))
            for i in order:
                best[i, mode] = min(best[i, mode], _per_step(versions[i], runs[i], mode))
    rows = [
        [mode, *(f"{best[i, mode] * 1e6:.2f} us ({best[i, mode] / best[0, mode]:.3f})" for i in range(len(versions)))]
        for mode in modes
    ]
    print(
        f"{len(runs[0])} {args.workload} traces of {len(kinds)} step kinds (of {drawn} drawn), "
        f"best of {args.rounds} rounds"
    )
    print(tabulate(rows, headers=["CPU per step", *names], tablefmt="github"))


if __name__ == "__main__":
    main()
