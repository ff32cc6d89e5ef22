"""Seeded random traces through the reference, digested, to prove a refactoring kept
the model's behaviour.

``trace_record(rng)`` draws a config and a run: mostly steps the reference says are
enabled, sometimes an arbitrary step with arbitrary fields (unknown replicas, reused
produce ids, offsets past the log...) so rejections are covered too. For every step it
records the step, then either the rejection (rule, reason) or the fired rules, the whole
observation, the invariant violations (with the step's before state) and the enabled
steps of the new state. ``chunk_digests`` hashes the records of each chunk of traces.

``tests/data/reference_traces.json`` holds the digests the reference produced when they
were recorded; ``test_reference_traces.py`` regenerates the traces with today's code and
compares. To record again (only when the model's behaviour is meant to change, with a
spec rule saying how):

    .venv/bin/python tests/reference_traces.py --traces 10000 > tests/data/reference_traces.json

The generator only uses ``random.Random(seed)`` and the public API, so the same seed
draws the same traces as long as the model behaves the same.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import sys
from typing import Any

from reference_impl import (
    Config,
    Generation,
    State,
    StepRejected,
    apply,
    check,
    enabled_steps,
    initial_state,
    observe,
    step_to_dict,
)
from reference_impl.steps import (
    Consume,
    Crash,
    DeliverAlterPartition,
    DeliverEpoch,
    DeliverFetch,
    DeliverLeaderAndIsr,
    Elect,
    EpochQuery,
    EpochRequest,
    EpochRound,
    Fetch,
    FetchRound,
    IsrExpiration,
    Produce,
    Restart,
    Step,
    Tick,
)

SEED = 20261123
TRACES_PER_CHUNK = 100
MAX_STEPS = 50
WILD = 0.2
"""Share of steps drawn from every step kind with arbitrary fields, not from the enabled ones."""


def random_config(rng: random.Random) -> Config:
    replicas = rng.choice([("A", "B"), ("A", "B", "C")])
    return Config(
        replicas=replicas,
        initial_leader=rng.choice([None, *replicas]),
        generation=rng.choice(list(Generation)),
        min_insync_replicas=rng.randint(1, len(replicas)),
        unclean_leader_election=rng.random() < 0.5,
        replica_lag_time_max_ms=rng.choice([1000, 30000]),
        replica_fetch_wait_max_ms=rng.choice([100, 500]),
        replica_high_watermark_checkpoint_interval_ms=rng.choice([0, 500, 5000]),
        request_timeout_ms=rng.choice([1000, 30000]),
    )


def wild_step(rng: random.Random, state: State) -> Step:
    """Any step kind, with fields that may well be rejected."""
    names = [*state.config.replicas, "Z"] if rng.random() < 0.05 else list(state.config.replicas)
    name = rng.choice(names)
    leo = max(r.leo for r in state.replicas)
    kind = rng.randrange(16)
    if kind == 0:
        produce_id = rng.choice([None, None, None, f"p{rng.randint(1, len(state.produces) + 1)}"])
        values = tuple(f"w{rng.randint(0, 99)}" for _ in range(rng.randint(1, 3)))
        to = rng.choice([None, None, None, name])
        return Produce(values=values, acks=rng.choice(["0", "1", "all"]), id=produce_id, to=to)
    if kind == 1:
        return Fetch(replica=name, max_records=rng.choice([None, None, 1, 2]), max_wait_ms=rng.choice([None, None, 0]))
    if kind == 2:
        return FetchRound(replica=name, max_records=rng.choice([None, None, 1, 2]))
    if kind == 3:
        return EpochRound(replica=name)
    if kind == 4:
        return Tick(ms=rng.choice([0, 1, 99, 250, 500, 999, 1000, 2500, 5000, 15000, 40000]))
    if kind == 5:
        return Crash(replica=name, unflushed_from=rng.choice([None, None, rng.randint(0, leo + 1)]))
    if kind == 6:
        return Restart(replica=name)
    if kind == 7:
        notify = None
        if rng.random() < 0.4:
            notify = tuple(r for r in state.config.replicas if rng.random() < 0.5)
        return Elect(leader=rng.choice([None, name]), notify=notify)
    if kind == 8:
        return Consume(offset=rng.randint(0, leo + 2))
    if kind == 9:
        return DeliverFetch(replica=name)
    if kind == 10:
        return DeliverEpoch(replica=name)
    if kind == 11:
        return DeliverLeaderAndIsr(replica=name)
    if kind == 13:
        current = rng.choice([None, None, state.controller.epoch, state.controller.epoch + 1])
        return EpochQuery(replica=name, epoch=rng.randint(0, state.controller.epoch + 1), current_leader_epoch=current)
    if kind == 14:
        return IsrExpiration(replica=name)
    if kind == 15:
        return DeliverAlterPartition(replica=name)
    return EpochRequest(replica=name)


def trace_record(rng: random.Random) -> list[Any]:
    """One random trace as plain data: the config, then one entry per step."""
    config = random_config(rng)
    state = initial_state(config)
    enabled = enabled_steps(state)
    out: list[Any] = [config.to_dict(), [step_to_dict(s) for s in enabled], [str(v) for v in check(state)]]
    for _ in range(rng.randint(0, MAX_STEPS)):
        step = wild_step(rng, state) if rng.random() < WILD or not enabled else rng.choice(enabled)
        try:
            after = apply(state, step)
        except StepRejected as exc:
            out.append([step_to_dict(step), "rejected", exc.rule, exc.reason])
            continue
        violations = [str(v) for v in check(after, state)]
        state = after
        enabled = enabled_steps(state)
        out.append(
            [
                step_to_dict(step),
                list(state.fired),
                observe(state),
                violations,
                [step_to_dict(s) for s in enabled],
            ]
        )
    return out


def chunk_lines(chunk: int, seed: int = SEED) -> list[str]:
    """The records of one chunk of ``TRACES_PER_CHUNK`` traces, one JSON line each."""
    rng = random.Random(seed * 100_003 + chunk)
    return [json.dumps(trace_record(rng), sort_keys=True, separators=(",", ":")) for _ in range(TRACES_PER_CHUNK)]


def chunk_digest(chunk: int, seed: int = SEED) -> str:
    """SHA-256 of one chunk's records."""
    digest = hashlib.sha256()
    for line in chunk_lines(chunk, seed):
        digest.update(line.encode())
        digest.update(b"\n")
    return digest.hexdigest()


def chunk_digests(chunks: int, seed: int = SEED) -> list[str]:
    return [chunk_digest(chunk, seed) for chunk in range(chunks)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--traces", type=int, default=10_000)
    parser.add_argument("--dump", type=int, metavar="CHUNK", help="print one chunk's records (to diff two versions)")
    args = parser.parse_args()
    if args.dump is not None:
        sys.stdout.write("\n".join(chunk_lines(args.dump)) + "\n")
        return
    chunks = -(-args.traces // TRACES_PER_CHUNK)
    doc = {
        "seed": SEED,
        "traces_per_chunk": TRACES_PER_CHUNK,
        "max_steps": MAX_STEPS,
        "chunks": chunk_digests(chunks),
    }
    json.dump(doc, sys.stdout, indent=1)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
