"""Seeded random walks over the reference's enabled steps: one corpus trace per (seed, index).

Every trace is a pure function of ``(seed, index, shape weights)``: its random generator
is seeded from those alone, so trace 417 of seed 1 is the same whether it is made alone
(``kconform generate --seed 1 --start 417 --traces 1``) or in a million-trace run on
Spark. The walk only takes steps the reference accepts (a proposed step is applied to the
reference; a rejected one is dropped and another is drawn), so preconditions live in the
reference alone, as in ``reference_impl/enabled.py``.

A *shape* is a kind of trace users need covered: a partition config drawn over the
dimensions that matter (2 to 5 replicas, every generation, min.insync.replicas 1..RF,
unclean election on or off, lag and checkpoint settings), a length range and weights over
step categories. Acks 0/1/all are drawn per produce. The mix of shapes is weighted
(``--shape NAME=WEIGHT``); see docs/replay.md for the default mix and its mean length.

With ``recorder`` set (``--record-from IMPL``) the reference still chooses the steps, but
the expected observations are what the recorded implementation reported; replaying such a
corpus on the reference checks the recording against the spec.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import reference_impl
from reference_impl import Config, Generation, State, StepRejected, apply, initial_state, observe, step_to_dict
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
    HeartbeatLapse,
    IsrExpiration,
    Produce,
    Restart,
    Step,
    Tick,
)

from ..adapters.base import Adapter, AdapterError
from ..search.distribution import TIMER_RANGES, RandomChooser, draw_initial, tick_lengths, timer
from .format import FORMAT, diff_observations

GENERATOR = "kconform generate"

Category = str
Proposer = Callable[[State, random.Random], list[Step]]


@dataclass(frozen=True)
class Shape:
    """A kind of trace: its length range and how often each step category is drawn."""

    name: str
    summary: str
    min_steps: int
    max_steps: int
    weights: Mapping[Category, float]


def _replicas(state: State) -> tuple[str, ...]:
    return state.config.replicas


def _produce(state: State, rng: random.Random) -> list[Step]:
    seq = len(state.produces) + 1
    n = rng.choice((1, 1, 1, 2, 3))
    values = tuple(f"v{seq}" if i == 0 else f"v{seq}.{i}" for i in range(n))
    # one in ten to a named broker, which may not lead (PRODUCE-6: NOT_LEADER_OR_FOLLOWER)
    to = rng.choice(_replicas(state)) if rng.random() < 0.1 else None
    return [Produce(values=values, acks=rng.choice(("all", "all", "1", "0")), to=to)]


def _fetch_fields(state: State, rng: random.Random) -> tuple[int | None, int | None]:
    """A fetch's ``max_records`` (1, or up to the longest log) and ``max_wait_ms`` (0:
    answered at once, or a wait below or above the config's), mostly their defaults."""
    top = max(1, max(r.leo for r in state.replicas))
    max_records = rng.choice((None, None, None, 1, rng.randint(1, top)))
    max_wait = rng.choice((None, None, None, None, 0, rng.randint(1, 2 * state.config.replica_fetch_wait_max_ms)))
    return max_records, max_wait


def _fetch(state: State, rng: random.Random) -> list[Step]:
    out: list[Step] = []
    for r in _replicas(state):
        max_records, max_wait = _fetch_fields(state, rng)
        out.append(Fetch(replica=r, max_records=max_records, max_wait_ms=max_wait))
        out.append(DeliverFetch(replica=r))
    return out


def _fetch_round(state: State, rng: random.Random) -> list[Step]:
    return [FetchRound(r, *_fetch_fields(state, rng)) for r in _replicas(state)]


def _epoch(state: State, rng: random.Random) -> list[Step]:
    out: list[Step] = []
    for r in _replicas(state):
        out += [EpochRequest(replica=r), DeliverEpoch(replica=r), EpochRound(replica=r)]
    return out


def _epoch_query(state: State, rng: random.Random) -> list[Step]:
    """A client's OffsetsForLeaderEpoch to any broker: any epoch up to one past the
    controller's, with or without a current leader epoch (KIP-320 fencing)."""
    top = state.controller.epoch + 1
    out: list[Step] = []
    for r in _replicas(state):
        current = rng.randint(0, top) if rng.random() < 0.5 else None
        out.append(EpochQuery(replica=r, epoch=rng.randint(0, top), current_leader_epoch=current))
    return out


def _isr_expiration(state: State, rng: random.Random) -> list[Step]:
    """A broker's ISR expiry check run now (``Partition.maybeShrinkIsr``)."""
    return [IsrExpiration(replica=r) for r in _replicas(state)]


def _heartbeat_lapse(state: State, rng: random.Random) -> list[Step]:
    """The KRaft controller fences a live follower that missed its heartbeats and unfences
    it at the next one (CTRL-FENCE-1; refused outside diverging-epoch, where the generator
    keeps only what the reference accepts)."""
    return [HeartbeatLapse(replica=r) for r in _replicas(state)]


def _tick(state: State, rng: random.Random) -> list[Step]:
    cfg = state.config
    # the timers' edges, round values, and any length up to one past the longest timer
    longest = max(tick_lengths(cfg))
    return [
        Tick(ms=rng.choice((cfg.replica_fetch_wait_max_ms, 100, 1000, *tick_lengths(cfg), rng.randint(1, longest + 1))))
    ]


def _tick_lag(state: State, rng: random.Random) -> list[Step]:
    cfg = state.config
    return [Tick(ms=rng.choice((cfg.replica_lag_time_max_ms // 2, cfg.replica_lag_time_max_ms + 1)))]


def _crash(state: State, rng: random.Random) -> list[Step]:
    return [Crash(replica=r) for r in _replicas(state)]


def _crash_in_flight(state: State, rng: random.Random) -> list[Step]:
    """A crash between a fetch request and its response: the fetching follower, or the
    leader holding its parked fetch, dies while the answer is in flight."""
    names = {m.dst for m in state.fetch_responses} | {m.src for m in state.fetch_responses}
    names |= {m.follower for m in state.parked_fetches} | {m.leader for m in state.parked_fetches}
    return [Crash(replica=r) for r in _replicas(state) if r in names]


def _power_failure(state: State, rng: random.Random) -> list[Step]:
    out: list[Step] = []
    for r in _replicas(state):
        leo = state.replica(r).leo
        out.append(Crash(replica=r, unflushed_from=rng.randint(0, leo) if leo else 0))
    return out


def _restart(state: State, rng: random.Random) -> list[Step]:
    return [Restart(replica=r) for r in _replicas(state)]


def _elect(state: State, rng: random.Random) -> list[Step]:
    out: list[Step] = [Elect()]
    for r in _replicas(state):
        out.append(Elect(leader=r))
        others = [x for x in _replicas(state) if x != r]
        notify = tuple(x for x in others if rng.random() < 0.5)
        out.append(Elect(leader=r, notify=(r, *notify)))
    return out


def _deliver_lai(state: State, rng: random.Random) -> list[Step]:
    """Controller messages: a LeaderAndIsr to a broker, or the answer to a leader's ISR
    proposal (diverging-epoch)."""
    out: list[Step] = [DeliverLeaderAndIsr(replica=r) for r in _replicas(state)]
    return out + [DeliverAlterPartition(replica=p.leader) for p in state.alter_partitions]


def _consume(state: State, rng: random.Random) -> list[Step]:
    top = max(r.leo for r in state.replicas)
    return [Consume(offset=rng.choice((0, 0, 1, rng.randint(0, top + 1))))]


PROPOSED_KINDS: frozenset[str] = frozenset(
    cls.kind
    for cls in (
        Produce,
        Fetch,
        DeliverFetch,
        FetchRound,
        EpochRequest,
        DeliverEpoch,
        EpochRound,
        EpochQuery,
        IsrExpiration,
        HeartbeatLapse,
        Tick,
        Crash,
        Restart,
        Elect,
        DeliverLeaderAndIsr,
        DeliverAlterPartition,
        Consume,
    )
)
"""The kinds the proposers above draw, each with fields chosen for it."""

UNPROPOSED_KINDS: frozenset[str] = frozenset(reference_impl.STEP_TYPES) - PROPOSED_KINDS
"""Kinds of the step table no proposer above knows (one the reference gained since they were
written): ``_other`` draws them as the reference enables them, so a new kind is in the corpus
from the day it is in the table (tests/test_step_kinds.py)."""

OTHER_WEIGHT = 0.3
"""The weight of the ``other`` category while some kind has no proposer of its own (0 when
every kind has one, so the draws of the shapes below do not change)."""


def _other(state: State, rng: random.Random) -> list[Step]:
    return [step for step in reference_impl.enabled_steps(state) if step.kind in UNPROPOSED_KINDS]


PROPOSERS: dict[Category, Proposer] = {
    "produce": _produce,
    "fetch": _fetch,
    "fetch_round": _fetch_round,
    "epoch": _epoch,
    "epoch_query": _epoch_query,
    "isr_expiration": _isr_expiration,
    "heartbeat_lapse": _heartbeat_lapse,
    "tick": _tick,
    "tick_lag": _tick_lag,
    "crash": _crash,
    "crash_in_flight": _crash_in_flight,
    "power_failure": _power_failure,
    "restart": _restart,
    "elect": _elect,
    "deliver_leader_and_isr": _deliver_lai,
    "consume": _consume,
    "other": _other,
}

_BASE = {
    "produce": 3.0,
    "fetch": 4.0,
    "fetch_round": 2.0,
    "epoch": 1.5,
    "epoch_query": 0.3,
    "isr_expiration": 0.3,
    "heartbeat_lapse": 0.2,
    "tick": 1.0,
    "tick_lag": 0.3,
    "crash": 0.4,
    "crash_in_flight": 0.0,
    "power_failure": 0.0,
    "restart": 0.8,
    "elect": 0.6,
    "deliver_leader_and_isr": 0.8,
    "consume": 0.4,
    "other": OTHER_WEIGHT if UNPROPOSED_KINDS else 0.0,
}

SHAPES: dict[str, Shape] = {
    s.name: s
    for s in (
        Shape("mixed", "every step category at its base weight", 8, 24, _BASE),
        Shape(
            "crash-mid-fetch",
            "crashes between a fetch request and its response",
            8,
            20,
            {**_BASE, "crash_in_flight": 3.0, "fetch": 5.0},
        ),
        Shape(
            "power-failure",
            "power failures: a crash that loses the unflushed tail of the log",
            10,
            24,
            {**_BASE, "power_failure": 1.5, "restart": 1.5},
        ),
        Shape(
            "elections",
            "elections in a row, LeaderAndIsr delivered late or not at all",
            8,
            20,
            {**_BASE, "elect": 4.0, "deliver_leader_and_isr": 2.0, "crash": 1.0, "restart": 1.5},
        ),
        Shape(
            "lag-expiry",
            "followers fall behind and leave the ISR by replica.lag.time.max.ms",
            8,
            20,
            {**_BASE, "tick_lag": 2.5, "produce": 4.0, "fetch": 2.0},
        ),
        Shape(
            "long-log",
            "long logs: many produces replicated in rounds",
            30,
            60,
            {**_BASE, "produce": 6.0, "fetch_round": 5.0, "crash": 0.2, "elect": 0.3},
        ),
    )
}

DEFAULT_MIX: dict[str, float] = {
    "mixed": 3.0,
    "crash-mid-fetch": 2.0,
    "power-failure": 1.0,
    "elections": 1.0,
    "lag-expiry": 1.0,
    "long-log": 0.5,
}


class GenerateError(Exception):
    """Bad generation options (an unknown shape, a negative weight)."""


def parse_mix(specs: list[str]) -> dict[str, float]:
    """``["long-log=2", "mixed=0"]`` over the default mix; raise ``GenerateError``."""
    mix = dict(DEFAULT_MIX)
    for spec in specs:
        name, sep, weight = spec.partition("=")
        if name not in SHAPES:
            raise GenerateError(f"--shape {spec}: unknown shape {name!r} (one of: {', '.join(SHAPES)})")
        try:
            value = float(weight) if sep else 1.0
        except ValueError:
            raise GenerateError(f"--shape {spec}: the weight must be a number") from None
        if value < 0:
            raise GenerateError(f"--shape {spec}: the weight must not be negative")
        mix[name] = value
    if not any(mix.values()):
        raise GenerateError("--shape: every shape has weight 0")
    return mix


def draw_config(rng: random.Random, generations: Sequence[Generation] = ()) -> Config:
    """A partition config over the dimensions users need covered; ``generations``: draw
    the generation among these only (default: every generation, which keeps every seeded
    corpus and the reference-trace digests as they were)."""
    n = rng.choice((2, 3, 3, 3, 4, 5))
    replicas = ("A", "B", "C", "D", "E")[:n]
    chooser = RandomChooser(rng)
    ranges = TIMER_RANGES
    return Config(
        replicas=replicas,
        generation=rng.choice(tuple(generations) or tuple(Generation)),
        min_insync_replicas=rng.randint(1, n),
        unclean_leader_election=rng.random() < 0.3,
        replica_lag_time_max_ms=timer(chooser, (1000, 10000, 30000), *ranges["replica_lag_time_max_ms"]),
        replica_fetch_wait_max_ms=timer(chooser, (500,), *ranges["replica_fetch_wait_max_ms"]),
        replica_high_watermark_checkpoint_interval_ms=timer(
            chooser, (0, 0, 5000), *ranges["replica_high_watermark_checkpoint_interval_ms"]
        ),
        request_timeout_ms=timer(chooser, (30000,), *ranges["request_timeout_ms"]),
    ).validate()


INITIAL_ONE_IN = 4
"""One trace in INITIAL_ONE_IN starts from a drawn state (``distribution.draw_initial``)."""


def trace_id(seed: int, index: int) -> str:
    return f"s{seed}-{index}"


def _rng(seed: int, index: int) -> random.Random:
    return random.Random(f"kconform-corpus:{seed}:{index}")


def _next_step(state: State, shape: Shape, rng: random.Random) -> tuple[Step, State] | None:
    """Draw a category by weight, then a proposal in it, until the reference accepts one."""
    weights = {c: w for c, w in shape.weights.items() if w > 0}
    while weights:
        category = rng.choices(list(weights), weights=list(weights.values()))[0]
        proposals = PROPOSERS[category](state, rng)
        rng.shuffle(proposals)
        for step in proposals:
            try:
                return step, apply(state, step)
            except StepRejected:
                continue
        del weights[category]
    return None


def generate_trace(
    seed: int,
    index: int,
    mix: Mapping[str, float] | None = None,
    recorder: Recorder | None = None,
    generations: Sequence[Generation] = (),
) -> dict[str, Any]:
    """Trace ``index`` of ``seed``: a corpus record (see ``format.py``)."""
    rng = _rng(seed, index)
    mix = mix or DEFAULT_MIX
    names = [n for n, w in mix.items() if w > 0]
    shape = SHAPES[rng.choices(names, weights=[mix[n] for n in names])[0]]
    config = draw_config(rng, generations)
    length = rng.randint(shape.min_steps, shape.max_steps)
    initial = draw_initial(RandomChooser(rng), config, INITIAL_ONE_IN)
    state = initial_state(config, initial)
    if recorder is not None:
        recorder.reset(config, initial)
    steps: list[dict[str, Any]] = []
    previous: dict[str, Any] | None = None
    stopped = ""
    for _ in range(length):
        found = _next_step(state, shape, rng)
        if found is None:
            break
        step, state = found
        do = step_to_dict(step)
        entry: dict[str, Any] = {"do": do}
        observation: dict[str, Any] | None
        if recorder is None:
            observation = observe(state)
        else:
            outcome = recorder.step(do)
            if outcome.stopped:
                stopped = outcome.stopped
                break
            observation = outcome.observation
            if outcome.rejected is not None:
                entry["expect_rejected"] = outcome.rejected
        if "expect_rejected" not in entry:
            assert observation is not None
            if previous is None:
                entry["expect"] = observation
            else:
                entry["changes"] = diff_observations(previous, observation)
            previous = observation
        entry["rules"] = list(dict.fromkeys(state.fired))
        steps.append(entry)
    provenance: dict[str, Any] = {
        "generator": GENERATOR,
        "version": reference_impl.__version__,
        "seed": seed,
        "index": index,
        "recorded_from": "reference" if recorder is None else recorder.spec,
        "recorded_version": reference_impl.__version__ if recorder is None else recorder.version,
    }
    if stopped:
        provenance["recording_stopped"] = stopped
    return {
        "corpus": FORMAT,
        "id": trace_id(seed, index),
        "shape": shape.name,
        "config": {k: v for k, v in config.to_dict().items() if v is not None},
        **({"initial": initial} if initial is not None else {}),
        # a trace has at least one step; one whose recording failed at once checks nothing
        "steps": steps or [{"do": {"kind": "tick", "ms": 1}}],
        "provenance": provenance,
    }


def reference_revision() -> str:
    """A digest of the reference's sources and the spec's rules, recorded in a corpus's
    manifest: two corpora with the same revision were generated by the same model, so a
    replay that disagrees with an old corpus can be told apart from a model that changed."""
    import hashlib
    from pathlib import Path

    from ..fixtures.paths import SCHEMA_DIR

    digest = hashlib.sha256()
    sources = sorted(Path(reference_impl.__file__).parent.glob("*.py"))
    for path in [*sources, SCHEMA_DIR / "replication.md"]:
        if path.is_file():
            digest.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()[:16]


@dataclass(frozen=True)
class Recorded:
    observation: dict[str, Any] | None = None
    rejected: str | None = None
    stopped: str = ""
    """Why recording ended early (the implementation failed to answer)."""


class Recorder:
    """Records what one implementation reports for the reference's walk."""

    def __init__(self, spec: str, adapter: Adapter) -> None:
        self.spec = spec
        self.adapter = adapter
        self.version = adapter.describe().version
        self._broken = ""

    def reset(self, config: Config, initial: dict[str, Any] | None = None) -> None:
        try:
            self.adapter.reset(config.to_dict(), initial)
            self._broken = ""
        except AdapterError as exc:
            self._broken = f"reset: {exc.message}"
            self.adapter.restart()

    def step(self, do: dict[str, Any]) -> Recorded:
        if self._broken:
            return Recorded(stopped=self._broken)
        try:
            answer = self.adapter.step(do)
        except AdapterError as exc:
            self.adapter.restart()
            self._broken = f"{do['kind']}: {exc.message}"
            return Recorded(stopped=self._broken)
        if answer.rejected is not None:
            return Recorded(rejected=answer.rejected)
        if answer.observation is None:
            return Recorded(stopped=f"{do['kind']}: no observation returned")
        return Recorded(observation=answer.observation)

    def close(self) -> None:
        self.adapter.close()


# --- part files -------------------------------------------------------------------------


@dataclass(frozen=True)
class PartTask:
    """Write traces ``start .. start + count - 1`` of ``seed`` to one part file."""

    out_dir: str
    part: int
    seed: int
    start: int
    count: int
    mix: tuple[tuple[str, float], ...]
    record_from: str | None = None
    timeout_s: float = 10.0
    compress: bool = True
    sys_path: tuple[str, ...] = ()
    start_timeout_s: float = 60.0
    generations: tuple[str, ...] = ()
    """Draw configs of these generations only (``--generation``); empty: every one."""


def part_name(part: int, compress: bool) -> str:
    return f"part-{part:05d}.jsonl" + (".gz" if compress else "")


def finished_part(task: PartTask) -> dict[str, Any] | None:
    """The manifest entry of ``task``'s part file if it was written completely (a part is
    renamed from ``.tmp`` only when whole), read back from the file; else None. An
    interrupted ``generate`` keeps these parts."""
    import gzip
    import json
    import os

    path = os.path.join(task.out_dir, part_name(task.part, task.compress))
    if not os.path.exists(path):
        return None
    steps = stopped = 0
    with (gzip.open if task.compress else open)(path, "rt", encoding="utf-8") as f:
        for raw in f:
            record = json.loads(raw)
            steps += len(record["steps"])
            stopped += "recording_stopped" in record["provenance"]
    entry = {"file": part_name(task.part, task.compress), "traces": task.count, "first_index": task.start}
    return {**entry, "steps": steps, "recording_stopped": stopped}


def write_part(task: PartTask) -> list[dict[str, Any]]:
    """Generate one part file; return its manifest entry (in a list, for ``+`` as reduce)."""
    import gzip
    import os
    import sys

    from .format import dumps
    from .progress import COUNT_SUFFIX

    for p in task.sys_path:
        if p not in sys.path and os.path.isdir(p):
            sys.path.append(p)
    recorder = None
    if task.record_from is not None:
        from ..implementations.registry import resolve

        adapter = resolve(task.record_from, timeout_s=task.timeout_s, start_timeout_s=task.start_timeout_s)
        recorder = Recorder(task.record_from, adapter)
    mix = dict(task.mix)
    name = part_name(task.part, task.compress)
    path = os.path.join(task.out_dir, name)
    stopped = 0
    steps = 0
    tmp = path + ".tmp"
    opener = gzip.open if task.compress else open
    counter = path + COUNT_SUFFIX  # progress per trace for the driver (PartsWatcher)
    try:
        with opener(tmp, "wt", encoding="utf-8") as f:
            for made, index in enumerate(range(task.start, task.start + task.count), start=1):
                record = generate_trace(task.seed, index, mix, recorder, tuple(Generation(g) for g in task.generations))
                stopped += "recording_stopped" in record["provenance"]
                steps += len(record["steps"])
                f.write(dumps(record) + "\n")
                if made % 100 == 0:
                    with open(counter, "w", encoding="ascii") as c:
                        c.write(str(made))
        os.replace(tmp, path)
        if os.path.exists(counter):
            os.remove(counter)
    finally:
        if recorder is not None:
            recorder.close()
    return [
        {"file": name, "traces": task.count, "first_index": task.start, "steps": steps, "recording_stopped": stopped}
    ]
