"""What the Kafka adapter (adapters/kafka, docs/kafka.md) costs: start-up and steps/s.

Start-up: from spawning the JVM to the answer to ``hello``, over several fresh processes.
Steps: every bundled fixture the adapter runs (diverging-epoch, only step kinds it has),
replayed PASSES times through one process; ``reset`` (new temporary log directories, a
LogManager and a Partition per broker) is timed apart from the steps. With ``--corpus``,
also the rate through kconform's own runner (each trace judged against the reference at
level settled, as ``kconform replay`` does, inline in one process): the first
``--traces`` diverging-epoch traces of that corpus. Usage:

    .venv/bin/python benchmarks/bench_kafka.py [--starts 5] [--passes 3] [--impl kafka-2.6|kafka-0.10]
        [--corpus out/corpus-k10k --traces 200] [--smoke]

``--smoke``: one start, one pass over 3 fixtures, and no build (it exits with code 3 and
the reason when the adapter is not built or java is missing; the smoke test skips then).
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import time

from tabulate import tabulate

from conformance.adapters.stdio import StdioAdapter
from conformance.corpus.format import Trace
from conformance.corpus.reading import plan_splits, read_split
from conformance.fixtures.loading import Fixture, load_fixtures
from conformance.fixtures.paths import FIXTURES_DIR
from conformance.implementations import kafka as kafka_impl
from conformance.implementations import kafka_lines
from conformance.judging.runner import run_fixture

UNSUPPORTED_FIELDS = ("max_records", "unflushed_from")


def runnable(
    fixtures: list[Fixture], steps: set[str], generation: str = "diverging-epoch", initial_state: bool = True
) -> list[Fixture]:
    """The fixtures the adapter runs whole: its generation, its step kinds, no field it ignores."""
    out = []
    for f in fixtures:
        if f.config.generation.value != generation or (f.initial is not None and not initial_state):
            continue
        if all(
            fs.do["kind"] in steps and not any(fs.do.get(k) is not None for k in UNSUPPORTED_FIELDS) for fs in f.steps
        ):
            out.append(f)
    return out


def startup(starts: int, impl: str = "kafka") -> list[float]:
    samples = []
    for _ in range(starts):
        adapter = start(impl)
        t0 = time.perf_counter()
        adapter.describe()
        samples.append(time.perf_counter() - t0)
        adapter.close()
    return samples


def corpus_rate(adapter: StdioAdapter, corpus: str, traces: int) -> tuple[int, int, float]:
    """(traces, steps, seconds) judging the first ``traces`` diverging-epoch traces of ``corpus``."""
    from pathlib import Path

    description = adapter.describe()
    chosen: list[Trace] = []
    for split in plan_splits([Path(corpus)]):
        for item in read_split(split):
            if isinstance(item, Trace) and item.fixture.config.generation.value == "diverging-epoch":
                chosen.append(item)
            if len(chosen) >= traces:
                break
        if len(chosen) >= traces:
            break
    steps = 0
    t0 = time.perf_counter()
    for item in chosen:
        result = run_fixture(adapter, description, item.fixture, "kafka", item.rules, "settled")
        steps += result.steps_run
        if result.outcome == "errored":
            adapter.restart()
    return len(chosen), steps, time.perf_counter() - t0


def start(impl: str) -> StdioAdapter:
    """``kafka`` (adapters/kafka) or an older line (``kafka-2.6``, ``kafka-0.10``:
    conformance.implementations.kafka_lines)."""
    if impl == "kafka":
        return kafka_impl.kafka()
    return kafka_lines.kafka_26() if impl == "kafka-2.6" else kafka_lines.kafka_010()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--starts", type=int, default=5)
    parser.add_argument("--passes", type=int, default=3)
    parser.add_argument("--smoke", action="store_true", help="tiny sizes, no build, seconds (tests run it)")
    parser.add_argument("--corpus", help="also judge corpus traces through kconform (a kconform generate folder)")
    parser.add_argument("--traces", type=int, default=200)
    parser.add_argument("--impl", choices=["kafka", "kafka-2.6", "kafka-0.10"], default="kafka")
    args = parser.parse_args()
    line = {"kafka-2.6": kafka_lines.KAFKA_26, "kafka-0.10": kafka_lines.KAFKA_010}.get(args.impl)
    built = kafka_impl.is_built() if line is None else kafka_lines.is_built(line)
    if args.smoke:
        args.starts, args.passes = 1, 1
        if shutil.which("java") is None or not built:
            reason = (
                "java is not on PATH"
                if shutil.which("java") is None
                else "the Kafka adapter is not built (docs/kafka.md)"
            )
            print(f"smoke: {reason}")
            raise SystemExit(3)
    if args.impl == "kafka" and not kafka_impl.is_built():
        kafka_impl.build()
    if line is not None and not kafka_lines.is_built(line):
        kafka_lines.build(line)
    starts = startup(args.starts, args.impl)
    adapter = start(args.impl)
    described = adapter.describe()
    fixtures, problems = load_fixtures([FIXTURES_DIR])
    assert not problems
    chosen = runnable(fixtures, set(described.steps), described.generations[0], described.initial_state)[
        : 3 if args.smoke else None
    ]
    reset_s: list[float] = []
    step_s: list[float] = []
    steps = 0
    for n in range(args.passes + 1):  # the first pass warms the JVM up and is not counted
        resets = 0.0
        stepping = 0.0
        steps = 0
        for f in chosen:
            t0 = time.perf_counter()
            adapter.reset(f.config.to_dict(), f.initial)
            t1 = time.perf_counter()
            for fs in f.steps:
                adapter.step(dict(fs.do))
                steps += 1
            resets += t1 - t0
            stepping += time.perf_counter() - t1
        if n:
            reset_s.append(resets / len(chosen))
            step_s.append(stepping / steps)
    replayed = corpus_rate(adapter, args.corpus, args.traces) if args.corpus else None
    adapter.close()
    rows = [
        ["start-up (spawn to hello)", f"{statistics.median(starts) * 1e3:,.0f} ms", f"min {min(starts) * 1e3:,.0f} ms"],
        ["reset", f"{statistics.median(reset_s) * 1e3:,.1f} ms", f"{1 / statistics.median(reset_s):,.0f} resets/s"],
        ["step", f"{statistics.median(step_s) * 1e3:,.2f} ms", f"{1 / statistics.median(step_s):,.0f} steps/s"],
    ]
    print(
        f"Kafka {described.version}: {len(chosen)} fixtures, {steps} steps per pass, "
        f"median of {args.passes} passes after a warm-up pass; {args.starts} starts\n"
    )
    if replayed is not None:
        n, replay_steps, seconds = replayed
        rows.append(
            [
                f"judged replay ({n} traces, {replay_steps} steps)",
                f"{seconds / max(replay_steps, 1) * 1e3:,.2f} ms",
                f"{replay_steps / seconds:,.0f} steps/s",
            ]
        )
    print(tabulate(rows, headers=["what", "median", ""], tablefmt="github"))


if __name__ == "__main__":
    main()
