"""The step sequences the core benchmark replays, as plain data (fixture form).

Generated with a seeded ``random.Random`` so every run replays the same steps; the
benchmark writes them to a file and hands the same file to every code version it
measures, so old and new code replay identical steps.

- ``mixed``: random 50-step traces: random configs (all generations, 2 or 3 replicas),
  each step drawn from the reference's enabled steps (produce, fetch, deliveries, epoch
  requests, ticks, crashes, restarts, elections, consumes), or only from those of the
  given ``kinds`` (the step kinds an older revision under comparison knows).
- ``common``: the produce + fetch path of a 3-replica partition in steady state: both
  followers' fetches wait in the purgatory; a producer sends acks=all, which completes
  them; each follower receives the record and fetches again, which moves the HW and
  acknowledges the produce. 50 steps per trace.
- ``long``: one common-path trace of any length (per-step cost by position).
- ``generated``: traces of ``kconform generate``'s default shape mix (crashes mid-fetch,
  power failures that lose a log's unflushed tail, elections in a row, lag expiry, long
  logs; a quarter start from a given state), drawn by the corpus generator itself
  (``conformance/corpus/generate.py``), so the benchmarks replay what a corpus holds.

Run as a script it prints what each workload holds (``--smoke``: a few traces each).
"""

from __future__ import annotations

import argparse
import random
from collections import Counter
from collections.abc import Mapping
from typing import Any

from reference_impl import Config, Generation, apply, enabled_steps, initial_state, step_to_dict

COMMON_CONFIG: dict[str, Any] = {"replicas": ["A", "B", "C"], "generation": "leader-epoch"}


def mixed_traces(
    count: int, length: int = 50, seed: int = 7, kinds: frozenset[str] | None = None
) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    out = []
    for _ in range(count):
        replicas = rng.choice([("A", "B"), ("A", "B", "C")])
        config = Config(
            replicas=replicas,
            generation=rng.choice(list(Generation)),
            min_insync_replicas=rng.randint(1, len(replicas)),
            unclean_leader_election=rng.random() < 0.5,
            replica_lag_time_max_ms=rng.choice([1000, 30000]),
            replica_high_watermark_checkpoint_interval_ms=rng.choice([0, 5000]),
        )
        state = initial_state(config)
        steps = []
        for _ in range(length):
            options = enabled_steps(state)
            if kinds is not None:
                options = [s for s in options if s.kind in kinds] or options
            step = rng.choice(options)
            state = apply(state, step)
            steps.append(step_to_dict(step))
        out.append({"config": config.to_dict(), "steps": steps})
    return out


def common_cycle(i: int, base: int = 0) -> list[dict[str, Any]]:
    """One produce + fetch cycle; every 25th cycle also lets time pass and consumes the
    last few records (``base``: how many records the log had before the first cycle)."""
    steps: list[dict[str, Any]] = [
        {"kind": "produce", "values": [f"v{i}"], "acks": "all"},
        {"kind": "deliver_fetch", "replica": "B"},
        {"kind": "deliver_fetch", "replica": "C"},
        {"kind": "fetch", "replica": "B"},
        {"kind": "fetch", "replica": "C"},
    ]
    if i % 25 == 24:
        steps += [{"kind": "tick", "ms": 100}, {"kind": "consume", "offset": base + max(0, i - 10)}]
    return steps


def long_trace(length: int, base: int = 0) -> list[dict[str, Any]]:
    steps: list[dict[str, Any]] = [{"kind": "fetch", "replica": "B"}, {"kind": "fetch", "replica": "C"}]
    i = 0
    while len(steps) < length:
        steps += common_cycle(i, base)
        i += 1
    return steps[:length]


def common_traces(count: int, length: int = 50) -> list[dict[str, Any]]:
    return [{"config": COMMON_CONFIG, "steps": long_trace(length)} for _ in range(count)]


def generated_traces(
    count: int, seed: int = 1, mix: Mapping[str, float] | None = None, with_initial: bool = True
) -> list[dict[str, Any]]:
    """``count`` traces of the corpus generator (default mix unless ``mix``), as plain data:
    ``config``, ``steps`` (each a fixture ``do``), ``shape`` and, when it starts from a given
    state, ``initial``. ``with_initial=False`` keeps only the traces from a fresh partition
    (for code that replays from ``initial_state(config)``); the same traces every run."""
    from conformance.corpus.generate import generate_trace

    out: list[dict[str, Any]] = []
    index = 0
    while len(out) < count:
        trace = generate_trace(seed, index, mix)
        index += 1
        if "initial" in trace and not with_initial:
            continue
        steps = [entry["do"] for entry in trace["steps"]]
        out.append(
            {
                "config": trace["config"],
                "steps": steps,
                "shape": trace["shape"],
                **({"initial": trace["initial"]} if "initial" in trace else {}),
            }
        )
    return out


def _summary(name: str, traces: list[dict[str, Any]]) -> str:
    steps = sum(len(t["steps"]) for t in traces)
    kinds = Counter(s["kind"] for t in traces for s in t["steps"])
    top = ", ".join(f"{k} {n}" for k, n in kinds.most_common(6))
    return f"{name}: {len(traces)} traces, {steps} steps ({top})"


def main() -> None:
    parser = argparse.ArgumentParser(description="Print what each benchmark workload holds.")
    parser.add_argument("--count", type=int, default=200, help="traces per workload (default 200)")
    parser.add_argument("--smoke", action="store_true", help="5 traces each: seconds (tests run it)")
    args = parser.parse_args()
    count = 5 if args.smoke else args.count
    print(_summary("mixed", mixed_traces(count)))
    print(_summary("common", common_traces(count)))
    generated = generated_traces(count)
    print(_summary("generated", generated))
    shapes = Counter(t["shape"] for t in generated)
    print("  shapes: " + ", ".join(f"{k} {n}" for k, n in shapes.most_common()))
    print(f"  from a given state: {sum('initial' in t for t in generated)}")


if __name__ == "__main__":
    main()
