"""Judging cost per step, flatness with trace length and log size, a high log start.

Issue 22 (items 1, 2 and 4): what judging a step costs against what the reference's own
step costs, on traces with crashes, elections and truncations (not only produce + fetch).
Every figure is CPU time (``time.process_time``) in one process, so the ratios come from
one run on one machine; ``taskset -c 0`` keeps the process on one core.

Figures:

- ``replay``: a corpus in the generator's default shape mix (``kconform generate``'s
  shapes, generated in memory) replayed inline on ``reference`` through the corpus
  worker (``corpus.replay.replay_split``): steps per CPU second.
- ``run``: a long mixed fixture through the fixture runner (``runner.run_fixture`` on the
  in-process reference adapter, as ``kconform run`` does) per step, against pure
  ``apply`` of the same steps; and a 5,000-step fixture against a 500-step one.
- ``parts``: the ``run`` figure with parts of the judging switched off (the safety
  monitor, the comparison, both): what each costs, and what a step costs with nothing
  checked (a diagnostic: a judge with them off is not one kconform ships).
- ``untrusted``: the same two lengths judged as any user's implementation is (shape checks,
  the reference's coverage), in process and over stdio, CPU of both processes per step.
- ``checked``: one long mixed trace (``mixed_walk``) applied with ``reference_impl.check``
  after every step: the last 1k-step window against the first.
- ``big log``: checked mixed steps from a state whose log holds 100k records, against the
  same steps from an empty log.
- ``log start``: building an ``initial:`` state whose log starts at offset 10^9.

    taskset -c 0 .venv/bin/python benchmarks/bench_judging.py
    .venv/bin/python benchmarks/bench_judging.py --smoke      # tiny sizes, seconds

``--profile NAME`` (replay, run, checked) prints the top of a cProfile of that figure instead.
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import pstats
import random
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

CLOCK = time.process_time


def settled_clock() -> float:
    """``CLOCK()`` after a full collection: a timed section does not pay for collecting the
    garbage (or the history) the section before it left (the judge makes no full
    collection while it runs, ``conformance/judging/collector.py``, so one is due after)."""
    gc.collect()
    return CLOCK()


KIND_WEIGHTS = {
    "produce": 4.0,
    "fetch": 3.0,
    "deliver_fetch": 3.0,
    "fetch_round": 1.0,
    "crash": 0.15,
    "restart": 1.0,
    "elect": 0.3,
    "tick": 1.0,
    "consume": 0.5,
}
"""How often each step kind is drawn (kinds not named: 1): logs grow, with a crash, an
election or a truncation every few dozen steps."""


def mixed_walk(length: int, seed: int = 3, config: Any = None, state: Any = None) -> tuple[Any, list[Any]]:
    """A seeded walk of ``length`` steps over the reference's enabled steps, weighted by
    ``KIND_WEIGHTS``: produces (acks all and 1), fetches, deliveries, ticks, crashes (some
    with a power failure), restarts, elections, consumes of the last few committed records
    (a consume from 0 reads the whole log: its cost is what it reads, not judging's).
    Returns (initial state, steps)."""
    from reference_impl import Config, Generation, apply, enabled_steps, initial_state
    from reference_impl.steps import Consume

    rng = random.Random(seed)
    if state is None:
        config = config or Config(
            replicas=("A", "B", "C"),
            generation=Generation.DIVERGING_EPOCH,
            min_insync_replicas=2,
            unclean_leader_election=True,
            replica_lag_time_max_ms=1000,
        )
        state = initial_state(config)
    start, steps = state, []
    for _ in range(length):
        by_kind: dict[str, list[Any]] = {}
        for step in enabled_steps(state):
            by_kind.setdefault(step.kind, []).append(step)
        kinds = sorted(by_kind)
        kind = rng.choices(kinds, [KIND_WEIGHTS.get(k, 1.0) for k in kinds])[0]
        step = rng.choice(by_kind[kind])
        if kind == "consume":  # the last few committed records: a consume costs what it reads
            leader = state.controller.leader
            hw = state.replica(leader).hw if leader is not None else 0
            step = Consume(offset=max(0, hw - 5))
        state = apply(state, step)
        steps.append(step)
    return start, steps


def _windows(start: Any, steps: list[Any], window: int, checked: bool) -> list[float]:
    """CPU seconds per step of each ``window``-step window of one replay."""
    from reference_impl import apply, check

    out, state = [], start
    if checked:
        check(state)
    for i in range(0, len(steps), window):
        t0 = CLOCK()
        for step in steps[i : i + window]:
            after = apply(state, step)
            if checked:
                check(after, state)
            state = after
        out.append((CLOCK() - t0) / len(steps[i : i + window]))
    return out


def checked_flatness(length: int, window: int, repeat: int) -> dict[str, float]:
    start, steps = mixed_walk(length)
    best_first = best_last = float("inf")
    pure_first = pure_last = float("inf")
    for _ in range(repeat):
        w = _windows(start, steps, window, checked=True)
        best_first, best_last = min(best_first, w[0]), min(best_last, w[-1])
        p = _windows(start, steps, window, checked=False)
        pure_first, pure_last = min(pure_first, p[0]), min(pure_last, p[-1])
    return {
        "checked first window us": best_first * 1e6,
        "checked last window us": best_last * 1e6,
        "checked last/first": best_last / best_first,
        "pure first window us": pure_first * 1e6,
        "pure last window us": pure_last * 1e6,
        "pure last/first": pure_last / pure_first,
    }


def _big_log(records: int) -> Any:
    from reference_impl import Config, Generation, StepRejected, apply, initial_state, step_from_dict

    config = Config(
        replicas=("A", "B", "C"),
        generation=Generation.DIVERGING_EPOCH,
        min_insync_replicas=2,
        unclean_leader_election=True,
        replica_lag_time_max_ms=1000,
    )
    state = initial_state(config)
    for batch in range(records // 1000):
        values = [f"b{batch}-{i}" for i in range(1000)]
        state = apply(state, step_from_dict({"kind": "produce", "values": values, "acks": "1"}))
    for kind, replica in (("fetch_round", "B"), ("fetch_round", "C"), ("fetch", "B"), ("fetch", "C")):
        try:  # both followers fetch everything, then fetch again (parked), which moves the HW
            state = apply(state, step_from_dict({"kind": kind, "replica": replica}))
        except StepRejected:  # an empty log: the round already left a fetch parked
            continue
    return state


def big_log(records: int, length: int, repeat: int) -> dict[str, float]:
    out = {}
    for name, n in (("empty", 0), ("big", records)):
        state = _big_log(n)
        start, steps = mixed_walk(length, seed=5, state=state)
        best = float("inf")
        for _ in range(repeat):
            best = min(best, sum(_windows(start, steps, length, checked=True)))
        out[f"checked log {name} us"] = best * 1e6
    out["checked big/empty"] = out["checked log big us"] / out["checked log empty us"]
    return out


def _fixture(start: Any, steps: list[Any], name: str) -> Any:
    """The walk as a corpus trace (``kconform generate``'s form): the first step states
    the reference's whole observation, every later one the changes to it."""
    from conformance.corpus.format import FORMAT, diff_observations, record_to_trace
    from reference_impl import apply, observe, step_to_dict

    state, rows, before = start, [], None
    for step in steps:
        state = apply(state, step)
        seen = observe(state)
        row: dict[str, Any] = {"do": step_to_dict(step)}
        if before is None:
            row["expect"] = seen
        else:
            row["changes"] = diff_observations(before, seen)
        rows.append(row)
        before = seen
    data = {"corpus": FORMAT, "id": name, "config": start.config.to_dict(), "steps": rows}
    return record_to_trace(data, f"<{name}>", 1).fixture


def run_cost(short: int, long: int, repeat: int) -> dict[str, float]:
    """``run_fixture`` on the in-process reference against pure ``apply``, per step, for a
    short and a long walk. The four measurements alternate round by round (each keeps its
    best), so a change of load in the middle hits both lengths alike: the ratio of the two
    lengths is the figure that matters, and it was the noisy one when each length was
    measured in a block of its own."""
    from conformance.adapters.in_process import ReferenceAdapter
    from conformance.judging.runner import reference_trace, run_fixture
    from reference_impl import apply

    cases = {}
    for n in (short, long):
        start, steps = mixed_walk(n, seed=11)
        fixture = _fixture(start, steps, f"walk-{n}")
        cases[n] = (start, steps, fixture, reference_trace(fixture))
    adapter = ReferenceAdapter()
    description = adapter.describe()
    best = dict.fromkeys(cases, float("inf"))
    pure = dict.fromkeys(cases, float("inf"))
    for _ in range(repeat):
        for n, (start, steps, fixture, trace) in cases.items():
            t0 = settled_clock()
            result = run_fixture(adapter, description, fixture, "reference", trace)
            best[n] = min(best[n], (CLOCK() - t0) / n)
            assert result.outcome == "passed", result.reason
            t0 = settled_clock()
            state = start
            for step in steps:
                state = apply(state, step)
            pure[n] = min(pure[n], (CLOCK() - t0) / n)
    out: dict[str, float] = {}
    for n in cases:
        out[f"run {n} us/step"] = best[n] * 1e6
        out[f"pure {n} us/step"] = pure[n] * 1e6
    out["run/pure (long)"] = best[long] / pure[long]
    out[f"run {long} vs {short} per step"] = best[long] / best[short]
    return out


def parts_cost(length: int, repeat: int) -> dict[str, float]:
    """``run_fixture`` on the in-process reference, per step, with the safety monitor
    (``Watch.safety`` finding nothing), the comparison (``matches_since`` always true) or
    both switched off, against pure ``apply``; the variants alternate round by round and
    each keeps its best, so the differences are what each part costs in this run."""
    from unittest import mock

    from conformance.adapters.in_process import ReferenceAdapter
    from conformance.judging import judge as judge_module
    from conformance.judging.runner import reference_trace, run_fixture
    from reference_impl import apply

    start, steps = mixed_walk(length, seed=11)
    fixture = _fixture(start, steps, f"walk-{length}")
    trace = reference_trace(fixture)
    adapter = ReferenceAdapter()
    description = adapter.describe()

    def no_findings(self: Any, do: Any, observation: Any) -> list[Any]:
        return []

    off: dict[str, list[Any]] = {
        "nothing off": [],
        "monitor off": [mock.patch.object(judge_module.Watch, "safety", no_findings)],
        "comparison off": [mock.patch.object(judge_module, "matches_since", lambda *_: True)],
    }
    off["both off"] = off["monitor off"] + off["comparison off"]
    best = dict.fromkeys(off, float("inf"))
    pure = float("inf")
    for _ in range(repeat):
        for name, patches in off.items():
            for patch in patches:
                patch.start()
            try:
                t0 = settled_clock()
                run_fixture(adapter, description, fixture, "reference", trace)
                best[name] = min(best[name], (CLOCK() - t0) / length)
            finally:
                for patch in patches:
                    patch.stop()
        t0 = settled_clock()
        state = start
        for step in steps:
            state = apply(state, step)
        pure = min(pure, (CLOCK() - t0) / length)
    out = {f"pure {length} us/step": pure * 1e6}
    for name, value in best.items():
        out[f"run, {name}, us/step"] = value * 1e6
        out[f"run, {name}, / pure"] = value / pure
    return out


def untrusted_cost(short: int, long: int, repeat: int) -> dict[str, float]:
    """``run_fixture`` on an implementation judged as any user's (not ``trusted``: every
    observation shape-checked, the reference's coverage computed when a property went
    unchecked): the reference in process and the stdio example adapter, on a produce +
    fetch walk (logs grow to a fifth of its length) and a mixed walk, short and long. CPU
    per step of this process and the adapter's (``/proc/PID/schedstat``), best of
    ``repeat``; the figure that matters is long against short (flat: the same)."""
    from bench_adapters import EXAMPLE, Untrusted
    from workloads import COMMON_CONFIG, long_trace

    from conformance.adapters.stdio import StdioAdapter
    from conformance.judging.runner import reference_trace, run_fixture
    from reference_impl import config_from_dict, initial_state, step_from_dict

    def child(adapter: Any) -> float:
        proc = getattr(adapter, "_proc", None)
        if proc is None:
            return 0.0
        return int(Path(f"/proc/{proc.pid}/schedstat").read_text().split()[0]) / 1e9

    produce_start = initial_state(config_from_dict(COMMON_CONFIG))
    cases: dict[tuple[str, int], Any] = {}
    for n in (short, long):
        produce_fetch = [step_from_dict(s) for s in long_trace(n)]
        cases["produce+fetch", n] = _fixture(produce_start, produce_fetch, f"produce-fetch-{n}")
        cases["mixed", n] = _fixture(*mixed_walk(n, seed=11), f"mixed-{n}")
    out: dict[str, float] = {}
    for name, adapter in (("in-process", Untrusted()), ("stdio", StdioAdapter(EXAMPLE))):
        try:
            description = adapter.describe()
            for (shape, n), fixture in cases.items():
                trace = reference_trace(fixture)
                best = float("inf")
                for _ in range(repeat):
                    t0, k0 = time.process_time(), child(adapter)
                    result = run_fixture(adapter, description, fixture, name, trace)
                    used = time.process_time() - t0 + child(adapter) - k0
                    assert result.outcome == "passed", result.reason
                    best = min(best, used / len(fixture.steps))
                out[f"{name} {shape} {n} us/step"] = best * 1e6
            for shape in ("produce+fetch", "mixed"):
                out[f"{name} {shape} {long} vs {short}"] = (
                    out[f"{name} {shape} {long} us/step"] / out[f"{name} {shape} {short} us/step"]
                )
        finally:
            adapter.close()
    return out


def replay_rate(traces: int, repeat: int) -> dict[str, float]:
    from conformance.corpus.reading import plan_splits
    from conformance.corpus.replay import ReplayTask, replay_split

    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "corpus"
        _generate(traces, folder)
        splits = plan_splits([folder])
        best = float("inf")
        for _ in range(repeat):
            t0 = settled_clock()
            for i, split in enumerate(splits):
                replay_split(ReplayTask(split=split, index=i, impls=("reference",), timeout_s=10, results_dir=None))
            best = min(best, CLOCK() - t0)
        total = _corpus_steps(folder)
    return {
        "replay traces": traces,
        "replay steps": total,
        "replay CPU s": best,
        "replay steps per CPU s": total / best,
    }


def _generate(traces: int, folder: Path) -> None:
    from conformance.cli.main import main

    code = main(
        [
            "generate",
            "--traces",
            str(traces),
            "--seed",
            "1",
            "--out",
            str(folder),
            "--backend",
            "inline",
            "--no-progress",
        ]
    )
    if code not in (0, None):
        raise SystemExit(f"kconform generate failed ({code})")


def _corpus_steps(folder: Path) -> int:
    from conformance.corpus.reading import plan_splits, read_split

    n = 0
    for split in plan_splits([folder]):
        for item in read_split(split):
            n += len(item.fixture.steps)  # type: ignore[union-attr]
    return n


def log_start(offset: int, repeat: int) -> dict[str, float]:
    from reference_impl import config_from_dict
    from reference_impl.given import given_state
    from reference_impl.log import Log

    if not hasattr(Log, "starting_at"):  # a revision that stores a placeholder per offset below the start
        print(f"log start {offset}: skipped (this revision stores {offset} placeholders)")
        return {}

    config = config_from_dict({"replicas": ["A", "B"], "generation": "diverging-epoch"})
    initial = {
        "replicas": {
            "A": {"log_start": offset, "log": ["a@0", "b@0"], "hw": offset + 2},
            "B": {"log_start": offset, "log": ["a@0", "b@0"], "hw": offset + 2},
        }
    }
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        given_state(config, initial)
        best = min(best, time.perf_counter() - t0)
    return {f"log start {offset} build ms (wall)": best * 1e3}


def _profile(fn: Callable[[], Any]) -> None:
    profile = cProfile.Profile()
    profile.runcall(fn)
    stats = pstats.Stats(profile, stream=sys.stdout)
    stats.sort_stats("cumulative").print_stats(35)
    stats.sort_stats("tottime").print_stats(25)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--smoke", action="store_true", help="tiny sizes: checks that every figure runs")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--profile", choices=("replay", "run", "checked"))
    parser.add_argument("--only", nargs="*", default=None, help="replay run parts untrusted checked biglog logstart")
    args = parser.parse_args()
    if "reference_impl" not in sys.modules:  # the checkout on PYTHONPATH (another revision) wins
        sys.path.append(str(Path(__file__).resolve().parent.parent))
    if args.smoke:
        sizes = {"traces": 20, "short": 50, "long": 100, "length": 400, "window": 100, "records": 2000, "steps": 100}
        repeat = 1
    else:
        sizes = {
            "traces": 2000,
            "short": 500,
            "long": 5000,
            "length": 50000,
            "window": 1000,
            "records": 100000,
            "steps": 2000,
        }
        repeat = args.repeat
    figures: dict[str, Callable[[], dict[str, float]]] = {
        "replay": lambda: replay_rate(sizes["traces"], repeat),
        "run": lambda: run_cost(sizes["short"], sizes["long"], repeat),
        "parts": lambda: parts_cost(sizes["long"], repeat),
        "untrusted": lambda: untrusted_cost(sizes["short"], sizes["long"], repeat),
        "checked": lambda: checked_flatness(sizes["length"], sizes["window"], repeat),
        "biglog": lambda: big_log(sizes["records"], sizes["steps"], repeat),
        "logstart": lambda: log_start(10**9 if not args.smoke else 10**6, repeat),
    }
    if args.profile:
        _profile(figures[args.profile])
        return
    for name, fn in figures.items():
        if args.only and name not in args.only:
            continue
        for key, value in fn().items():
            print(f"{key:40} {value:14.3f}" if isinstance(value, float) else f"{key:40} {value:14}", flush=True)


if __name__ == "__main__":
    main()
