"""How long one step costs: pure reference, in-process adapter, stdio adapter with and without
deltas, one request at a time or pipelined (steps sent ahead, protocol 4's ``pipelining``).

Replays every bundled fixture's steps, as the runner sends them (``wire.wire_step``: every
field spelled out), REPEAT times through each path in one run, and reports per step the
median wall time and the CPU time of the whole work: this process plus, for stdio, the
adapter process (read from ``/proc/PID/schedstat``, so the child's JSON work is counted, not hidden in
another process). The CPU figure is the one to compare on a loaded machine: wall time then
mostly measures how long each process waits for a core. Usage:

    .venv/bin/python benchmarks/bench_adapters.py [--repeat 20] [--smoke]

``--smoke`` replays 5 fixtures once (seconds; tests/test_benchmarks_smoke.py runs it).

It also runs on an older checkout that has no observation deltas (copy this file and
``workloads.py`` into its ``benchmarks/``, run it with ``PYTHONPATH`` set to it): the delta
rows are then left out, so "before" and "after" come from the same script.
"""

from __future__ import annotations

import argparse
import contextlib
import inspect
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tabulate import tabulate
from workloads import COMMON_CONFIG, generated_traces, long_trace

from conformance.adapters.base import Adapter
from conformance.adapters.in_process import ReferenceAdapter
from conformance.adapters.stdio import StdioAdapter
from conformance.adapters.wire import wire_step
from conformance.fixtures.loading import Fixture, load_fixtures
from conformance.fixtures.paths import FIXTURES_DIR
from conformance.judging.runner import run_fixtures
from reference_impl import State, Step, StepRejected, apply, config_from_dict, initial_state, step_from_dict
from reference_impl.given import normalise

ROOT = Path(__file__).resolve().parents[1]
DELTAS = "deltas" in inspect.signature(StdioAdapter).parameters
"""This checkout's stdio adapter knows observation deltas (protocol 4)."""
PIPELINING = "pipelining" in inspect.signature(StdioAdapter).parameters
"""This checkout's stdio adapter can send steps ahead (protocol 4's ``pipelining``)."""
EXAMPLE = [sys.executable, str(ROOT / "examples" / "stdio_reference_adapter.py")]


@dataclass(frozen=True)
class Run:
    """One fixture's (or workload trace's) steps, parsed and as sent on the wire."""

    config: dict[str, Any]
    initial: dict[str, Any] | None
    start: Callable[[], State]
    steps: list[tuple[Step, dict[str, Any]]]


def fixture_run(fixture: Fixture) -> Run:
    return Run(
        fixture.config.to_dict(),
        fixture.initial,
        fixture.start,
        wire_steps(fixture.start, [fs.step for fs in fixture.steps]),
    )


def trace_run(config: dict[str, Any], steps: list[dict[str, Any]], initial: dict[str, Any] | None = None) -> Run:
    """A ``workloads.py`` trace (plain steps from its config's initial state, or from ``initial``)."""
    parsed = config_from_dict(config)
    full = normalise(parsed, initial) if initial is not None else None

    def start() -> State:
        return initial_state(parsed, full)

    return Run(parsed.to_dict(), full, start, wire_steps(start, [step_from_dict(s) for s in steps]))


def wire_steps(start: Callable[[], State], steps: list[Step]) -> list[tuple[Step, dict[str, Any]]]:
    """Each step as parsed and as sent on the wire (produce ids as the runner numbers them)."""
    out: list[tuple[Step, dict[str, Any]]] = []
    produced = 0
    state = start()
    for step in steps:
        sent = wire_step(step, produced)
        try:
            state = apply(state, sent.parsed)
        except StepRejected:  # a step the fixture expects refused: the state stays
            pass
        else:
            produced += step.kind == "produce"
        out.append((sent.parsed, dict(sent)))
    return out


def pure(runs: list[Run]) -> int:
    steps = 0
    for run in runs:
        state = run.start()
        for parsed, _ in run.steps:
            with contextlib.suppress(StepRejected):
                state = apply(state, parsed)
            steps += 1
    return steps


class Through:
    """Replay through an adapter; ``child_cpu`` reads the CPU time of its process, if any.
    ``ahead``: send each run's steps ahead as far as the adapter takes them (``send_ahead``)."""

    def __init__(self, adapter: Adapter, ahead: bool = False) -> None:
        self.adapter = adapter
        self.ahead = ahead

    def __call__(self, runs: list[Run]) -> int:
        steps = 0
        for run in runs:
            self.adapter.reset(run.config, run.initial)
            sent = 0  # steps before this one were sent (ahead, or by ``step``)
            for k, (_, data) in enumerate(run.steps):
                while self.ahead and sent < len(run.steps) and self.adapter.send_ahead(run.steps[sent][1]):
                    sent += 1
                self.adapter.step(data)
                sent = max(sent, k + 1)
                steps += 1
        return steps

    def child_cpu(self) -> float:
        """CPU seconds of the adapter's process so far (``/proc/PID/schedstat``, in ns), 0 without one."""
        proc = getattr(self.adapter, "_proc", None)
        if proc is None:
            return 0.0
        try:
            return int(Path(f"/proc/{proc.pid}/schedstat").read_text().split()[0]) / 1e9
        except (OSError, ValueError, IndexError):
            return 0.0


def measure(fn: Callable[[list[Run]], int], runs: list[Run], repeat: int) -> tuple[float, float, int]:
    """Median wall and CPU seconds per step over ``repeat`` passes (after one warm-up pass)."""
    fn(runs)  # warm up (and start the stdio process)
    child = fn.child_cpu if isinstance(fn, Through) else (lambda: 0.0)
    walls, cpus = [], []
    steps = 0
    for _ in range(repeat):
        c0, k0, t0 = time.process_time(), child(), time.perf_counter()
        steps = fn(runs)
        walls.append((time.perf_counter() - t0) / steps)
        cpus.append((time.process_time() - c0 + child() - k0) / steps)
    return statistics.median(walls), statistics.median(cpus), steps


class Untrusted(ReferenceAdapter):
    """The reference as any in-process implementation is judged: its observations
    shape-checked (a subclass is not ``trusted`` anyway; it keeps the sharing promise, as
    the reference's ``Observer`` does, only by saying so)."""

    trusted = False
    shares_observations = True


class Judged(Through):
    """Through the runner: ``run_fixtures`` (judge, schema check, safety monitor) as ``kconform run`` does."""

    def __init__(self, adapter: Adapter, fixtures: list[Fixture]) -> None:
        super().__init__(adapter)
        self.fixtures = fixtures

    def __call__(self, runs: list[Run]) -> int:
        _, results = run_fixtures(self.adapter, "bench", self.fixtures)
        if any(r.outcome == "errored" for r in results):
            raise SystemExit(f"a fixture errored: {next(r.reason for r in results if r.outcome == 'errored')}")
        return sum(len(run.steps) for run in runs)


def table(title: str, paths: list[tuple[str, Callable[[list[Run]], int]]], runs: list[Run], repeat: int) -> None:
    figures: dict[str, tuple[float, float]] = {}
    steps = 0
    for name, fn in paths:
        wall, cpu, steps = measure(fn, runs, repeat)
        figures[name] = (wall, cpu)
    base_wall, base_cpu = next(iter(figures.values()))
    rows = [
        [name, f"{wall * 1e6:.1f}", f"{wall / base_wall:.2f}x", f"{cpu * 1e6:.1f}", f"{cpu / base_cpu:.2f}x"]
        for name, (wall, cpu) in figures.items()
    ]
    print(f"\n{title}: {len(runs)} runs, {steps} steps per pass, median of {repeat} passes\n")
    headers = ["path", "wall us/step", "wall ratio", "CPU us/step (both processes)", "CPU ratio"]
    print(tabulate(rows, headers=headers, tablefmt="github"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=20)
    parser.add_argument(
        "--long", type=int, default=2000, help="steps of the long produce + fetch trace (default 2,000)"
    )
    parser.add_argument("--generated", type=int, default=200, help="generated traces (default 200)")
    parser.add_argument("--smoke", action="store_true", help="5 fixtures, a 50-step trace, one pass: seconds")
    args = parser.parse_args()
    loaded, problems = load_fixtures([FIXTURES_DIR])
    if problems:
        raise SystemExit(f"the bundled fixtures do not load: {problems[0]}")
    if args.smoke:
        loaded, args.repeat, args.long, args.generated = loaded[:5], 1, 50, 5
    runs = [fixture_run(f) for f in loaded]
    adapters: list[Adapter] = []

    def stdio(deltas: bool, pipelining: bool = False) -> StdioAdapter:
        options: dict[str, bool] = {"deltas": deltas} if DELTAS else {}
        options |= {"pipelining": pipelining} if PIPELINING else {}
        adapter = StdioAdapter(EXAMPLE, **options)
        adapters.append(adapter)
        return adapter

    def paths(*rows: tuple[str, Callable[[list[Run]], int]]) -> list[tuple[str, Callable[[list[Run]], int]]]:
        return [row for row in rows if (DELTAS or "deltas" not in row[0]) and (PIPELINING or "pipelined" not in row[0])]

    try:
        with_deltas = stdio(True)
        with_deltas.describe()
        if DELTAS and not with_deltas.deltas:
            raise SystemExit("the example adapter did not opt into observation deltas")
        table(
            "Bundled fixtures, adapter steps only",
            paths(
                ("in-process adapter (apply + observe)", Through(ReferenceAdapter())),
                ("stdio adapter, whole observations", Through(stdio(False))),
                ("stdio adapter, observation deltas", Through(with_deltas)),
                ("stdio adapter, observation deltas, pipelined", Through(stdio(True, True), ahead=True)),
                ("reference apply (pure)", pure),
            ),
            runs,
            args.repeat,
        )
        table(
            "Bundled fixtures through the runner (run_fixtures: judge, schema check, safety monitor)",
            paths(
                ("in-process reference, judged as any implementation", Judged(Untrusted(), loaded)),
                ("stdio example, whole observations, one at a time", Judged(stdio(False), loaded)),
                ("stdio example, observation deltas, one at a time", Judged(stdio(True), loaded)),
                ("stdio example, whole observations, pipelined", Judged(stdio(False, True), loaded)),
                ("stdio example, observation deltas, pipelined", Judged(stdio(True, True), loaded)),
            ),
            runs,
            args.repeat,
        )
        generated = [trace_run(t["config"], t["steps"], t.get("initial")) for t in generated_traces(args.generated)]
        table(
            f"{args.generated} traces of the corpus generator's default shape mix (crashes, elections, power failures)",
            paths(
                ("in-process adapter (apply + observe)", Through(ReferenceAdapter())),
                ("stdio adapter, whole observations", Through(stdio(False))),
                ("stdio adapter, observation deltas", Through(stdio(True))),
                ("stdio adapter, observation deltas, pipelined", Through(stdio(True, True), ahead=True)),
            ),
            generated,
            args.repeat,
        )
        long = [trace_run(COMMON_CONFIG, long_trace(args.long))]
        table(
            f"One {args.long}-step produce + fetch trace (logs grow to about {args.long // 5} records)",
            paths(
                ("in-process adapter (apply + observe)", Through(ReferenceAdapter())),
                ("stdio adapter, whole observations", Through(stdio(False))),
                ("stdio adapter, observation deltas", Through(stdio(True))),
                ("stdio adapter, observation deltas, pipelined", Through(stdio(True, True), ahead=True)),
            ),
            long,
            max(1, args.repeat // 4),
        )
    finally:
        for adapter in adapters:
            adapter.close()


if __name__ == "__main__":
    main()
