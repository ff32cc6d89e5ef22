"""The reference core's speed: this checkout against a baseline revision, in one run.

Usage (from the repository root):

    .venv/bin/python benchmarks/bench_core.py                  # baseline: main
    .venv/bin/python benchmarks/bench_core.py --baseline ae30def --repeat 5 --rounds 3
    .venv/bin/python benchmarks/bench_core.py --baseline none   # this checkout only

The baseline revision is checked out into a temporary git worktree under /tmp (removed
afterwards). Both versions replay the same steps (``workloads.py``, written once to
``out/bench/workloads.json``), each in its own process (``--worker``), one after the
other, alternating for ``--rounds`` rounds (each figure keeps its best). Every figure
is also given as a ratio to a minimal mutable-list replay of the
same transitions measured in the same worker (``floor``): the cost of just applying
the state changes (log truncations and appends, HWs, producer outcomes, committed
records) to plain lists and dicts, without deciding them.

Figures (best of ``--repeat`` runs each):

- mixed / common pure: ``apply`` per step on random 50-step traces / the produce + fetch path;
- mixed / common checked: ``apply`` then ``invariants.check(after, before)`` per step;
- long@P: per-step cost of the 1,000 steps before position P of one long common-path
  trace (the baseline runs at most 10,000 steps: its cost grows with the position);
- log 100k / log 0: per-step cost of 2,000 common-path steps after a 100,000-record
  log was built, and from an empty log;
- consume 10k: one ``consume`` from offset 0 over 10,000 committed records;
- fuzz: ``kconform fuzz``'s differential machine against the in-process reference
  (steps per CPU second);
- kconform run / kconform run CPU: wall time, and CPU time (user + system), of the
  default ``kconform run`` in a fresh process.

Every per-step figure is CPU time of the worker (``time.process_time``): on a machine
shared with other work, wall time mostly measures the waiting for a core.

A baseline older than some step kinds (``103febc`` knows 13 of today's 15) gets mixed
traces drawn from the kinds both versions know, and only traces the baseline replays
without a rejection are kept (its rules differ in places): the figures' heading says how
many were drawn.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
BASELINE_MAX_LONG = 10_000
CLOCK = time.process_time
"""Per-step figures are CPU time of the worker process: on a shared machine, time spent
waiting for a core is not the model's cost (the code is single-threaded)."""


# --- the worker: runs inside the checkout under test --------------------------------


def _load(traces: list[dict[str, Any]]) -> list[tuple[Any, list[Any]]]:
    from reference_impl import config_from_dict, step_from_dict

    return [(config_from_dict(t["config"]), [step_from_dict(s) for s in t["steps"]]) for t in traces]


def replay_runs(runs: list[tuple[Any, list[Any]]], checked: bool) -> int:
    from reference_impl import apply, check, initial_state

    steps = 0
    for config, trace in runs:
        state = initial_state(config)
        if checked:
            check(state)
        for step in trace:
            after = apply(state, step)
            if checked:
                check(after, state)
            state = after
            steps += 1
    return steps


def _best(fn: Callable[[], int], repeat: int) -> float:
    """Best CPU seconds per unit of ``fn`` (which returns how many units it did)."""
    best = float("inf")
    for _ in range(repeat):
        t0 = CLOCK()
        units = fn()
        best = min(best, (CLOCK() - t0) / max(units, 1))
    return best


def _effects(runs: list[tuple[Any, list[Any]]]) -> list[tuple[int, list[Any], list[str]]]:
    """Per trace: replica count, the per-step changes, and the final state's summary."""
    from reference_impl import apply, initial_state

    out = []
    for config, trace in runs:
        state = initial_state(config)
        changes = []
        for step in trace:
            after = apply(state, step)
            per_replica = []
            for i, (old, new) in enumerate(zip(state.replicas, after.replicas, strict=True)):
                common = min(len(old.log), len(new.log))
                while common and old.log[common - 1] != new.log[common - 1]:
                    common -= 1
                truncate_to = common if common < len(old.log) else None
                appended = list(new.log[common:]) if len(new.log) > common else []
                hw = new.hw if new.hw != old.hw else None
                if truncate_to is not None or appended or hw is not None:
                    per_replica.append((i, truncate_to, appended, hw))
            watched = {p.id for p in state.pending_produces}
            outcomes = [(o.id, o.status) for o in list(after.produces)[len(state.produces) :]]
            outcomes += [(o.id, o.status) for o in after.produces if o.id in watched]
            committed = list(after.committed)[len(state.committed) :]
            changes.append((per_replica, outcomes, committed))
            state = after
        summary = [
            *[repr(list(r.log)) + f"/{r.hw}" for r in state.replicas],
            repr(sorted((o.id, o.status) for o in state.produces)),
            repr(list(state.committed)),
        ]
        out.append((len(state.replicas), changes, summary))
    return out


def _floor(effects: list[tuple[int, list[Any], list[str]]], check_result: bool) -> int:
    """The minimal mutable replay: lists for logs, ints for HWs, a dict, a list."""
    steps = 0
    for count, changes, summary in effects:
        logs: list[list[Any]] = [[] for _ in range(count)]
        hws = [0] * count
        outcomes: dict[str, str] = {}
        committed: list[Any] = []
        for per_replica, new_outcomes, new_committed in changes:
            for i, truncate_to, appended, hw in per_replica:
                log = logs[i]
                if truncate_to is not None:
                    del log[truncate_to:]
                if appended:
                    log.extend(appended)
                if hw is not None:
                    hws[i] = hw
            for produce_id, status in new_outcomes:
                outcomes[produce_id] = status
            if new_committed:
                committed.extend(new_committed)
            steps += 1
        if check_result:
            mine = [
                *[repr(log) + f"/{hw}" for log, hw in zip(logs, hws, strict=True)],
                repr(sorted(outcomes.items())),
                repr(committed),
            ]
            if mine != summary:
                raise SystemExit("the floor replay does not match the reference")
    return steps


def _position_costs(steps: list[Any], checked: bool, positions: list[int], repeat: int) -> dict[int, float]:
    """Seconds per step of the 1,000 steps before each position, in straight passes over
    the whole trace (best of ``repeat`` passes per window). Straight, not replayed from a
    kept state: a replay branches the logs' shared buffers (see ``log.py``), which is
    another workload."""
    from workloads import COMMON_CONFIG

    from reference_impl import apply, check, config_from_dict, initial_state

    wanted = set(positions)
    best = dict.fromkeys(positions, float("inf"))
    for _ in range(repeat):
        state = initial_state(config_from_dict(COMMON_CONFIG))
        if checked:
            check(state)
        t0 = CLOCK()
        for n, step in enumerate(steps[: max(positions)], start=1):
            if n - 1 + 1000 in wanted:
                t0 = CLOCK()
            after = apply(state, step)
            if checked:
                check(after, state)
            state = after
            if n in wanted:
                best[n] = min(best[n], (CLOCK() - t0) / 1000)
    return best


def _big_log_state(records: int) -> Any:
    from workloads import COMMON_CONFIG

    from reference_impl import apply, config_from_dict, initial_state, step_from_dict

    state = initial_state(config_from_dict(COMMON_CONFIG))
    for batch in range(records // 1000):
        values = [f"b{batch}-{i}" for i in range(1000)]
        state = apply(state, step_from_dict({"kind": "produce", "values": values, "acks": "1"}))
    return _catch_up(state)


def _catch_up(state: Any) -> Any:
    """Both followers fetch everything, then fetch again (parked), which moves the HW."""
    from reference_impl import apply, step_from_dict

    for kind, replica in (("fetch_round", "B"), ("fetch_round", "C"), ("fetch", "B"), ("fetch", "C")):
        state = apply(state, step_from_dict({"kind": kind, "replica": replica}))
    return state


def _per_step_from(state: Any, steps: list[Any], repeat: int) -> float:
    from reference_impl import apply

    def run() -> int:
        current = state
        for step in steps:
            current = apply(current, step)
        return len(steps)

    return _best(run, repeat)


def _fuzz_rate(examples: int) -> float:
    from conformance.adapters.in_process import ReferenceAdapter
    from conformance.search.stateful import fuzz
    from reference_impl import Generation

    count = 0

    class Counting(ReferenceAdapter):
        trusted = shares_observations = True  # the reference, counted (a subclass says so)

        def step(self, step: dict[str, Any]) -> Any:
            nonlocal count
            count += 1
            return super().step(step)

    t0 = CLOCK()
    for generation in Generation:
        if fuzz(Counting(), generation, examples=examples, steps=30, derandomize=True) is not None:
            raise SystemExit("fuzz found a disagreement of the reference with itself")
    return count / (CLOCK() - t0)


def _run_wall(root: Path, repeat: int) -> tuple[float, float]:
    """Best wall time and best CPU time (user + system) of a default ``kconform run``."""
    env = {**os.environ, "PYTHONPATH": str(root)}
    best, best_cpu = float("inf"), float("inf")
    with tempfile.TemporaryDirectory() as tmp:
        for _ in range(repeat):
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            t0 = time.perf_counter()
            subprocess.run(
                [sys.executable, "-m", "conformance.cli.main", "run"],
                cwd=tmp,
                env=env,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                check=False,
            )
            best = min(best, time.perf_counter() - t0)
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            cpu = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
            best_cpu = min(best_cpu, cpu)
    return best, best_cpu


def probe(workloads_path: Path) -> list[int]:
    """The positions of the mixed traces this checkout replays without an error."""
    data = json.loads(workloads_path.read_text(encoding="utf-8"))
    fine = []
    for i, trace in enumerate(data["mixed"]):
        try:
            replay_runs(_load([trace]), checked=False)
        except Exception:  # any failure (a rejection by older rules) drops the trace
            continue
        fine.append(i)
    return fine


def worker(root: Path, workloads_path: Path, long: int, repeat: int, fuzz_examples: int) -> dict[str, Any]:
    from workloads import COMMON_CONFIG, long_trace

    from reference_impl import apply, config_from_dict, initial_state, step_from_dict

    data = json.loads(workloads_path.read_text(encoding="utf-8"))
    out: dict[str, Any] = {}
    for name in ("mixed", "common"):
        runs = _load(data[name])
        out[f"{name} pure"] = _best(lambda runs=runs: replay_runs(runs, checked=False), repeat)
        out[f"{name} checked"] = _best(lambda runs=runs: replay_runs(runs, checked=True), repeat)
        effects = _effects(runs)
        _floor(effects, check_result=True)
        out[f"{name} floor"] = _best(lambda effects=effects: _floor(effects, check_result=False), repeat)

    steps = [step_from_dict(s) for s in long_trace(long)]
    positions = sorted({1000, 10_000, long} & set(range(1000, long + 1, 1000)))
    for checked in (False, True):
        costs = _position_costs(steps, checked, positions, repeat)
        label = "checked" if checked else "pure"
        for position in positions:
            out[f"long@{position} {label}"] = costs[position]

    # Without the two first fetches (both states have them parked already).
    workload = [step_from_dict(s) for s in long_trace(2002)[2:]]
    big = _big_log_state(100_000)
    big_workload = [step_from_dict(s) for s in long_trace(2002, base=100_000)[2:]]
    empty = initial_state(config_from_dict(COMMON_CONFIG))
    for replica in ("B", "C"):
        empty = apply(empty, step_from_dict({"kind": "fetch", "replica": replica}))
    out["log 0"] = _per_step_from(empty, workload, repeat)
    out["log 100k"] = _per_step_from(big, big_workload, repeat)

    committed = initial_state(config_from_dict(COMMON_CONFIG))
    for batch in range(10):
        values = [f"c{batch}-{i}" for i in range(1000)]
        committed = apply(committed, step_from_dict({"kind": "produce", "values": values, "acks": "all"}))
    committed = _catch_up(committed)
    consume = step_from_dict({"kind": "consume", "offset": 0})
    if len(apply(committed, consume).consumed.records) != 10_000:
        raise SystemExit("the consume benchmark state does not have 10,000 committed records")
    out["consume 10k"] = _best(lambda: (apply(committed, consume), 1)[1], repeat)

    out["fuzz steps/s"] = _fuzz_rate(fuzz_examples)
    out["kconform run"], out["kconform run CPU"] = _run_wall(root, repeat)
    return out


# --- the driver ----------------------------------------------------------------------


def _step_kinds(root: Path) -> frozenset[str]:
    env = {**os.environ, "PYTHONPATH": str(root)}
    code = "import json; from reference_impl.steps import STEP_TYPES; print(json.dumps(list(STEP_TYPES)))"
    done = subprocess.run([sys.executable, "-c", code], env=env, cwd=root, capture_output=True, text=True, check=True)
    return frozenset(json.loads(done.stdout))


def _probe(root: Path, workloads: Path) -> list[int]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(root), str(ROOT / "benchmarks")])}
    command = [sys.executable, str(Path(__file__).resolve()), "--probe", str(workloads)]
    done = subprocess.run(command, env=env, cwd=root, capture_output=True, text=True, check=True)
    return json.loads(done.stdout)  # type: ignore[no-any-return]


def _write_workloads(path: Path, count: int, baseline: Path | None) -> str:
    """The workloads file; returns a note on the mixed traces when a baseline needed fewer kinds."""
    from workloads import common_traces, mixed_traces

    common = common_traces(count)
    kinds = _step_kinds(baseline) if baseline is not None else None
    if kinds is None or kinds >= _step_kinds(ROOT):
        path.write_text(json.dumps({"mixed": mixed_traces(count), "common": common}))
        return ""
    drawn: list[dict[str, Any]] = []
    kept: list[dict[str, Any]] = []
    while len(kept) < count and len(drawn) < 100 * count:
        batch = mixed_traces(count * 5, seed=7 + len(drawn), kinds=kinds)
        drawn += batch
        path.write_text(json.dumps({"mixed": batch, "common": []}))
        kept += [batch[i] for i in _probe(baseline, path)]  # type: ignore[arg-type]
    path.write_text(json.dumps({"mixed": kept[:count], "common": common}))
    return (
        f"mixed: {min(count, len(kept))} traces of the {len(kinds)} step kinds the baseline knows, "
        f"the first its rules accept of {len(drawn)} drawn"
    )


def _run_worker(root: Path, workloads: Path, args: argparse.Namespace, long: int) -> dict[str, Any]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(root), str(ROOT / "benchmarks")])}
    command = [
        sys.executable,
        str(Path(__file__).resolve()),
        "--worker",
        str(root),
        "--workloads",
        str(workloads),
        "--long",
        str(long),
        "--repeat",
        str(args.repeat),
        "--fuzz-examples",
        str(args.fuzz_examples),
    ]
    done = subprocess.run(command, env=env, cwd=root, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"worker for {root} failed:\n{done.stderr}")
    return json.loads(done.stdout)  # type: ignore[no-any-return]


def _render(figure: str, value: float) -> str:
    if figure == "fuzz steps/s":
        return f"{value:,.0f}/s"
    if figure in ("kconform run", "kconform run CPU"):
        return f"{value:.2f} s"
    if figure == "consume 10k":
        return f"{value * 1e3:.2f} ms"
    return f"{value * 1e6:.1f} us"


def _floor_for(figure: str, results: dict[str, Any]) -> float | None:
    if figure.startswith("mixed"):
        return results["mixed floor"]  # type: ignore[no-any-return]
    if figure.startswith(("common", "long", "log")):
        return results["common floor"]  # type: ignore[no-any-return]
    return None


def _best_of(rounds: list[dict[str, Any]]) -> dict[str, Any]:
    """Each figure's best value over the rounds (highest rate, lowest time)."""
    best = dict(rounds[0])
    for results in rounds[1:]:
        for figure, value in results.items():
            best[figure] = max(best[figure], value) if figure == "fuzz steps/s" else min(best[figure], value)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description="Benchmark the reference core against a baseline revision.")
    parser.add_argument("--baseline", default="main", help="git revision to compare with, or 'none' (default: main)")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--long", type=int, default=50_000, help="length of the long trace (default 50,000)")
    parser.add_argument("--mixed", type=int, default=200, help="number of mixed 50-step traces (default 200)")
    parser.add_argument("--fuzz-examples", type=int, default=20, help="fuzz examples per generation (default 20)")
    parser.add_argument("--rounds", type=int, default=2, help="alternating rounds of both versions (default 2)")
    parser.add_argument("--worker", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--workloads", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--probe", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--smoke", action="store_true", help="no baseline, tiny sizes: seconds (tests run it)")
    args = parser.parse_args()
    if args.smoke:
        args.baseline, args.repeat, args.long, args.mixed, args.fuzz_examples, args.rounds = "none", 1, 2000, 5, 1, 1

    if args.probe is not None:
        json.dump(probe(args.probe), sys.stdout)
        return

    if args.worker is not None:
        json.dump(worker(args.worker, args.workloads, args.long, args.repeat, args.fuzz_examples), sys.stdout)
        return

    sys.path.insert(0, str(ROOT / "benchmarks"))
    from tabulate import tabulate

    out_dir = ROOT / "out" / "bench"
    out_dir.mkdir(parents=True, exist_ok=True)
    workloads = out_dir / "workloads.json"
    note = ""

    columns: list[tuple[str, dict[str, Any]]] = []
    if args.baseline == "none":
        _write_workloads(workloads, args.mixed, None)
        columns.append(("this checkout", _best_of([_run_worker(ROOT, workloads, args, args.long)])))
    else:
        tmp = Path(tempfile.mkdtemp(prefix="kconform-baseline-"))
        subprocess.run(
            ["git", "worktree", "add", "--detach", str(tmp), args.baseline], cwd=ROOT, check=True, capture_output=True
        )
        try:
            note = _write_workloads(workloads, args.mixed, tmp)
            # Alternate the two versions round by round and keep each figure's best, so a
            # change in the machine's load between two workers does not decide the ratio.
            old: list[dict[str, Any]] = []
            new: list[dict[str, Any]] = []
            for _ in range(args.rounds):
                old.append(_run_worker(tmp, workloads, args, min(args.long, BASELINE_MAX_LONG)))
                new.append(_run_worker(ROOT, workloads, args, args.long))
        finally:
            subprocess.run(["git", "worktree", "remove", "--force", str(tmp)], cwd=ROOT, check=False)
        columns = [(args.baseline, _best_of(old)), ("this checkout", _best_of(new))]

    figures = [f for f in columns[-1][1] if not f.endswith("floor")]
    for _, results in columns:
        for f in results:
            if f not in figures and not f.endswith("floor"):
                figures.append(f)
    rows = []
    for figure in figures:
        row = [figure]
        for _, results in columns:
            value = results.get(figure)
            floor = _floor_for(figure, results)
            if value is None:
                row.append("")
            elif floor:
                row.append(f"{_render(figure, value)} ({value / floor:.1f}x floor)")
            else:
                row.append(_render(figure, value))
        if len(columns) == 2 and figure in columns[0][1]:
            old, new = columns[0][1][figure], columns[1][1][figure]
            row.append(f"{new / old:.2f}" if figure != "fuzz steps/s" else f"{old / new:.2f}")
        rows.append(row)
    for name, results in columns:
        rows.append(
            [
                f"floor ({name})",
                f"mixed {results['mixed floor'] * 1e6:.2f} us",
                f"common {results['common floor'] * 1e6:.2f} us",
            ]
        )
    headers = ["figure", *[name for name, _ in columns]]
    if len(columns) == 2:
        headers.append("new/old time")
    if note:
        print(note)
    print(tabulate(rows, headers=headers, tablefmt="github"))


if __name__ == "__main__":
    main()
