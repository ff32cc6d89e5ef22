"""`kconform explore`'s search speed: states per CPU second, against a baseline revision.

```sh
.venv/bin/python benchmarks/bench_explore.py --baseline eb53ccd --rounds 3
.venv/bin/python benchmarks/bench_explore.py --baseline eb53ccd --rounds 3 --gc-off
.venv/bin/python benchmarks/bench_explore.py --replicas 3 --depth 5 --generation diverging-epoch
.venv/bin/python benchmarks/bench_explore.py --baseline a567aee --workers 2 --depth 7 --rounds 2
.venv/bin/python benchmarks/bench_explore.py --baseline f1fb291 --merge-outputs --depth 7
```

Each measurement is one fresh process (``explore.explore`` on one config, two records, HW
checkpointed on every change, as ``kconform explore`` runs it, no implementation replayed)
timing itself with ``time.process_time``: on a machine shared with other jobs, wall time
measures the machine, CPU time the code (and still moves by 10-20% with the load, so
each figure is given for every round, the baseline and this tree alternating). The
baseline is ``git archive``d into a temporary directory; both must find the same states
and transitions (the search is exact), which is checked. With ``--workers N`` (N > 1) the
search runs on N forked processes (``explore_parallel.search``): the CPU time is then the
whole process tree's (the workers are reaped before it is read), and the wall time is
printed too, since saving wall time is what the workers are for. With ``--merge-outputs``
states that differ only in their outputs are one (``explore``'s ``merge_outputs``, what
``kconform explore`` does without ``--impl``) in every tree that has the option: a baseline
without it searches every state, and only trees that searched alike must agree.

Why a benchmark of its own: issue 22 asks the default 60-second search to complete depth
8 with two replicas and 6 with three, so its unit is states per CPU second
(docs/explore.md, "How far it gets").
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tarfile
import tempfile
from io import BytesIO
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

CHILD = """
import gc, json, resource, sys, time
from reference_impl import config_from_dict
from conformance.search.explore import explore
generation, replicas, depth, workers = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[5])
import inspect
can_merge = "merge_outputs" in inspect.signature(explore).parameters
merge = {"merge_outputs": True} if sys.argv[6] == "merge" and can_merge else {}
if sys.argv[4] == "gc-off":
    gc.disable()
config = config_from_dict({
    "replicas": ["A", "B", "C", "D", "E"][:replicas],
    "generation": generation,
    "replica_high_watermark_checkpoint_interval_ms": 0,
})
def used():
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime
started, wall = (time.process_time(), time.perf_counter()) if workers == 1 else (used(), time.perf_counter())
if workers == 1:
    result, _ = explore(config, depth, 2, **merge)
    cpu = time.process_time() - started
else:
    from conformance.search.explore_parallel import search
    result, _ = search(config, depth, 2, workers=workers, tree=False, **merge)
    cpu = used() - started
wall = time.perf_counter() - wall
print(json.dumps({
    "states": result.states, "transitions": result.transitions, "levels": result.levels, "cpu": cpu, "wall": wall,
    "merged": bool(merge),
}))
"""


def measure(
    tree: Path,
    generation: str,
    replicas: int,
    depth: int,
    gc_off: bool = False,
    workers: int = 1,
    merge_outputs: bool = False,
) -> dict[str, object]:
    """One search in a fresh process importing the packages under ``tree`` (``gc_off``: with
    the cyclic garbage collector off for the whole process; ``workers``: on that many;
    ``merge_outputs``: states that differ only in their outputs as one, where the tree can)."""
    env = {**os.environ, "PYTHONPATH": str(tree)}
    merge = "merge" if merge_outputs else "keep"
    argv = [generation, str(replicas), str(depth), "gc-off" if gc_off else "gc", str(workers), merge]
    done = subprocess.run(
        [sys.executable, "-c", CHILD, *argv],
        cwd=tree,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    figures: dict[str, object] = json.loads(done.stdout.strip().splitlines()[-1])
    return figures


def checkout(revision: str, into: Path) -> Path:
    """The packages of ``revision`` (``git archive``), extracted under ``into``."""
    archive = subprocess.run(
        ["git", "archive", revision, "conformance", "reference_impl", "kconform"],
        cwd=ROOT,
        capture_output=True,
        check=True,
    ).stdout
    with tarfile.open(fileobj=BytesIO(archive)) as tar:
        tar.extractall(into, filter="data")
    return into


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--baseline", action="append", metavar="REV", help="a git revision to compare with (repeatable; default: none)"
    )
    parser.add_argument(
        "--generation", action="append", help="repeatable (default: hw-truncation, leader-epoch, diverging-epoch)"
    )
    parser.add_argument("--replicas", type=int, default=2, help="default: 2")
    parser.add_argument("--depth", type=int, help="default: 6 with two replicas, 5 with more")
    parser.add_argument("--rounds", type=int, default=2, help="alternations of baseline and this tree (default: 2)")
    parser.add_argument(
        "--gc-off",
        action="store_true",
        help="the collector off in every search's process: the code's cost apart from how it manages the "
        "collector (explore pauses it itself since 3aabef9; eb53ccd paused it around each transition only)",
    )
    parser.add_argument(
        "--workers", type=int, default=1, help="search on this many processes (explore_parallel; default: 1)"
    )
    parser.add_argument(
        "--merge-outputs",
        action="store_true",
        help="states that differ only in their outputs as one, as kconform explore without --impl (in every "
        "tree that has the option)",
    )
    parser.add_argument(
        "--smoke",
        action="store_true",
        help="depth 3, one generation, one round, and once on two workers with outputs merged the other way (seconds)",
    )
    args = parser.parse_args()
    generations = args.generation or ["hw-truncation", "leader-epoch", "diverging-epoch"]
    depth = args.depth or (6 if args.replicas == 2 else 5)
    rounds = args.rounds
    if args.smoke:
        generations, depth, rounds = generations[:1], 3, 1
    with tempfile.TemporaryDirectory() as tmp:
        trees = [(revision, checkout(revision, Path(tmp) / str(i))) for i, revision in enumerate(args.baseline or [])]
        trees.append(("this tree", ROOT))
        for generation in generations:
            seen: dict[str, tuple[object, object, object]] = {}
            for round_ in range(1, rounds + 1):
                for name, tree in trees:
                    figures = measure(
                        tree, generation, args.replicas, depth, args.gc_off, args.workers, args.merge_outputs
                    )
                    states, cpu = int(str(figures["states"])), float(str(figures["cpu"]))
                    wall = f" ({float(str(figures['wall'])):.2f} s wall)" if args.workers > 1 else ""
                    merged = ", outputs merged" if figures["merged"] else ""
                    print(
                        f"{generation} {args.replicas} replicas depth {depth}, round {round_}, {name}{merged}: "
                        f"{states:,} states, {figures['transitions']:,} transitions, {cpu:.2f} CPU s{wall}, "
                        f"{states / cpu:,.0f} states per CPU s",
                        flush=True,
                    )
                    seen[name] = (figures["merged"], figures["states"], figures["transitions"])
            if args.smoke and args.workers == 1:  # the workers' path and the merging must not rot either
                figures = measure(ROOT, generation, args.replicas, depth, args.gc_off, 2, not args.merge_outputs)
                print(f"{generation} depth {depth} on two workers, the other way: {figures['states']:,} states")
                seen["two workers"] = (figures["merged"], figures["states"], figures["transitions"])
            if any(len({v for v in seen.values() if v[0] is merged}) > 1 for merged in (True, False)):
                print(f"{generation}: the trees searched differently: {seen}", file=sys.stderr)
                return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
