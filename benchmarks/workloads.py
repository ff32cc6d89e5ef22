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
"""

from __future__ import annotations

import random
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
