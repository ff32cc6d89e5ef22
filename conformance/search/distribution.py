"""What random runs look like: the configs and the weighted steps kconform fuzz draws.

One definition of the distribution, shared by ``kconform fuzz`` (``stateful.py``, drawing
from a seeded ``random.Random``: cheap, thousands of steps per second) and the property
tests (``tests/test_properties.py``, drawing through hypothesis so that it shrinks). Both
go through a ``Chooser`` with two primitives, an integer in a range and a weighted index.

Configs: 2-5 replicas (2 and 3 most often), ``min.insync.replicas`` anywhere in 1..RF,
unclean election on or off, HW checkpoints on every change or every 500/5000 ms, several
lag and fetch-wait times, and sometimes a leader other than the first replica.

Steps: the reference's ``enabled_steps`` says what may happen (preconditions are never
re-coded here); a step *kind* is picked by weight among the enabled ones (``WEIGHTS``), then
one of its enabled steps, and then its free parameters: produce acks 0/1/all, one or two
records, sometimes sent to a named broker; fetch with ``max_records`` 1 or ``max_wait_ms`` 0; ticks of 1 ms, of the
fetch wait, of half the lag, of exactly lag - 1, lag and lag + 1 ms, of the checkpoint
interval and of the request timeout; elections notifying only a subset of the brokers (the
rest stay in flight); crashes losing an unflushed tail (``unflushed_from``); consumes at
any offset up to past the leader's LEO; epoch queries for any epoch from -1 (undefined) to
one past the controller's, with or without a current leader epoch (-1 too); refused steps
drawn kind first, half of them repeating the step just taken when it is refused now; whole rounds (``fetch_round``,
``epoch_round``) as well as their split steps. Two combined steps: ``fetch_all`` (every follower
that may fetch does, once) and ``deliver_all`` (every fetch answer in flight arrives), the
chains that move the high watermark. A step kind the reference gains later is drawn with
``OTHER_WEIGHT`` until it gets its own weight.
"""

from __future__ import annotations

import bisect
import itertools
import random
from collections.abc import Callable, Mapping, Sequence
from dataclasses import MISSING, fields, replace
from typing import Any, Protocol

from reference_impl import Config, Generation, State, Step, enabled_steps
from reference_impl.enabled import candidate_steps
from reference_impl.steps import (
    Consume,
    Crash,
    Elect,
    EpochQuery,
    EpochRequest,
    EpochRound,
    Fetch,
    FetchRound,
    Produce,
    Tick,
)

WEIGHTS: dict[str, int] = {
    "fetch": 20,
    "deliver_fetch": 20,
    "produce": 14,
    "fetch_all": 6,
    "deliver_all": 6,
    "fetch_round": 4,
    "epoch_round": 2,
    "epoch_request": 8,
    "deliver_epoch": 8,
    "tick": 8,
    "deliver_leader_and_isr": 5,
    "deliver_alter_partition": 5,
    "isr_expiration": 2,
    "epoch_query": 2,
    "heartbeat_lapse": 2,
    "consume": 3,
    "elect": 3,
    "restart": 3,
    "crash": 2,
    "refused": 4,
}
"""Default relative weight of each step kind (and combined step) among the enabled ones:
replication chains (fetch, deliver, produce) dominate, crashes and elections are rarer.
``refused``: a step whose precondition does not hold (a fetch while one is in flight, a
controlled election of a replica outside the ISR, ...), which the implementation must
refuse as the reference does. ``kconform fuzz --weights fetch=30,crash=0`` changes them;
weight 0 never draws a kind."""

OTHER_WEIGHT = 3
"""The weight of a step kind not in ``WEIGHTS`` (one the reference added since)."""

COMBINED = ("fetch_all", "deliver_all")
REFUSED = "refused"
"""Combined steps: several steps of one kind drawn as one choice (each judged on its own)."""


class Chooser(Protocol):
    """Where the randomness comes from."""

    def integer(self, lo: int, hi: int) -> int:
        """An integer in ``lo..hi`` (both included); shrinks towards ``lo``."""
        ...

    def weighted(self, weights: Sequence[int]) -> int:
        """An index into ``weights`` drawn with those weights (at least one positive)."""
        ...


class RandomChooser:
    """Choices from a seeded ``random.Random``: what ``kconform fuzz`` draws with."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng

    def integer(self, lo: int, hi: int) -> int:
        return lo + int(self.rng.random() * (hi - lo + 1)) if hi > lo else lo

    def weighted(self, weights: Sequence[int]) -> int:
        cumulative = list(itertools.accumulate(weights))
        return bisect.bisect_right(cumulative, self.rng.random() * cumulative[-1])


class DataChooser:
    """Choices drawn through hypothesis, so a property test shrinks them: give it
    ``data.draw`` of ``st.data()`` or the ``draw`` of an ``st.composite``."""

    def __init__(self, draw: Callable[[Any], Any]) -> None:
        from hypothesis import strategies as st

        self.draw = draw
        self.st = st

    def integer(self, lo: int, hi: int) -> int:
        return int(self.draw(self.st.integers(lo, hi))) if hi > lo else lo

    def weighted(self, weights: Sequence[int]) -> int:
        cumulative = list(itertools.accumulate(weights))
        # shrinks towards the first positive weight
        return bisect.bisect_right(cumulative, self.integer(0, cumulative[-1] - 1))


def pick(chooser: Chooser, options: Sequence[Any]) -> Any:
    return options[chooser.integer(0, len(options) - 1)]


def pick_weighted(chooser: Chooser, options: Sequence[tuple[Any, int]]) -> Any:
    return options[chooser.weighted([w for _, w in options])][0]


# --- configs ---------------------------------------------------------------------------

NAMES = ("A", "B", "C", "D", "E")


def draw_config(chooser: Chooser, generation: Generation, sizes: Sequence[int] = (2, 3, 4, 5)) -> Config:
    """A random partition config of ``generation`` (see the module doc)."""
    size_weights = {2: 4, 3: 4, 4: 1, 5: 1}
    n = pick_weighted(chooser, [(s, size_weights.get(s, 1)) for s in sizes])
    replicas = NAMES[:n]
    return Config(
        replicas=replicas,
        initial_leader=pick_weighted(chooser, [(None, 4), *((r, 1) for r in replicas[1:])]),
        generation=generation,
        min_insync_replicas=chooser.integer(1, n),
        unclean_leader_election=pick_weighted(chooser, [(False, 3), (True, 1)]),
        replica_lag_time_max_ms=timer(chooser, (1000, 30000, 200), *TIMER_RANGES["replica_lag_time_max_ms"]),
        replica_fetch_wait_max_ms=timer(chooser, (500, 100), *TIMER_RANGES["replica_fetch_wait_max_ms"]),
        replica_high_watermark_checkpoint_interval_ms=timer(
            chooser, (0, 5000, 500), *TIMER_RANGES["replica_high_watermark_checkpoint_interval_ms"]
        ),
        request_timeout_ms=timer(chooser, (30000, 1000), *TIMER_RANGES["request_timeout_ms"]),
    )


TIMER_RANGES: dict[str, tuple[int, int]] = {
    "replica_lag_time_max_ms": (1, 60000),
    "replica_fetch_wait_max_ms": (1, 2000),
    "replica_high_watermark_checkpoint_interval_ms": (0, 10000),
    "request_timeout_ms": (1, 60000),
}
"""The range each timer is drawn from when not one of its usual values (Kafka's default
and the short values the timers' edges are easiest to reach with)."""

WHOLE_RANGE = 4
"""One draw in WHOLE_RANGE takes a field anywhere in its range instead of a usual value."""


def timer(chooser: Chooser, usual: Sequence[int], lo: int, hi: int) -> int:
    """One of the ``usual`` values, or (one time in ``WHOLE_RANGE``) anything in ``lo..hi``:
    a timer at 7 ms or 41234 ms meets edges the round values never do."""
    if chooser.integer(1, WHOLE_RANGE) == 1:
        return chooser.integer(lo, hi)
    return int(pick(chooser, usual))


INITIAL_ONE_IN = 3
"""One run in INITIAL_ONE_IN starts from a drawn state (``draw_initial``)."""


LEADERLESS_ONE_IN = 8
"""One drawn start in LEADERLESS_ONE_IN has no leader (``draw_initial``)."""
DOWN_ONE_IN = 6
"""One drawn start in DOWN_ONE_IN has a follower down (its failure not handled yet)."""


def draw_initial(chooser: Chooser, config: Config, one_in: int = INITIAL_ONE_IN) -> dict[str, Any] | None:
    """A start other than the empty partition, as a fixture's ``initial:`` block with its
    defaults spelled out (``reference_impl.given.normalise``), or None (the empty start,
    ``one_in - 1`` times in ``one_in``).

    The leader holds up to four records of epochs rising to the partition's epoch (0-3);
    each follower holds a prefix of it, sometimes (epoch generations) followed by a tail
    the leader does not have (records of an epoch the leader wrote nothing in at that
    offset: what a deposed leader keeps; such a follower is outside the ISR and, under
    leader-epoch, still truncating); the ISR is the leader and some followers, the HW at
    most what they all share; sometimes the leader's log starts above 0 (at most its HW);
    one start in ``DOWN_ONE_IN`` has a follower down (crashed, its failure not handled yet);
    one time in ``LEADERLESS_ONE_IN`` nobody leads (the leader's failure handled, no
    election since: a fenced ISR member's removal without a leader, CTRL-FAIL-2/3, starts
    there). A drawn state the model refuses (INIT-1..5) is dropped for the empty start."""
    from reference_impl import initial_state
    from reference_impl.given import InitialStateError, normalise

    if chooser.integer(1, one_in) != 1:
        return None
    leader = config.initial_leader or config.replicas[0]
    profile = config.profile
    epoch = chooser.integer(0, 3)
    epochs = sorted(chooser.integer(0, epoch) for _ in range(chooser.integer(0, 4)))
    leader_log = [f"i{i}@{e}" for i, e in enumerate(epochs)]
    replicas: dict[str, dict[str, Any]] = {}
    prefix: dict[str, int] = {}
    diverged: list[int] = []
    tails: set[int] = set()
    """Where the followers with a deposed leader's tail part from the leader's log: its
    log start stays at or below them (a divergence below the leader's log start is one no
    epoch can find, which Kafka leaves too, KAFKA-7415, but the safety properties cannot
    tell from a broken one without the history)."""
    """Follower -> how many of the leader's records it holds: its HW is at most that (an HW
    never covers a record the leader did not send it)."""
    isr, shared = [leader], len(leader_log)
    leftovers = 1 if config.unclean_leader_election else 3
    for name in config.replicas:
        if name == leader:
            continue
        k = chooser.integer(0, len(leader_log))
        replica: dict[str, Any] = {"log": leader_log[:k]}
        floor = epochs[k - 1] if k else 0
        # an older epoch than the partition's, and not one the leader wrote from offset k on
        # (each such epoch at most once: one leader wrote it, one sequence of records)
        others = [e for e in range(floor, epoch) if e not in epochs[k:] and e not in tails]
        if profile.keeps_epoch_cache and others and chooser.integer(0, 2) == 0:
            # a deposed leader's tail: outside the ISR, and under leader-epoch still to
            # truncate (under hw-truncation it was cut to the HW on becoming follower)
            tail = pick(chooser, others)
            tails.add(tail)
            replica["log"] += [f"x{name}{i}@{tail}" for i in range(chooser.integer(1, 2))]
            diverged.append(k)
            if profile.asks_epoch_before_fetch:
                replica["fetch_state"] = "truncating"
        elif not profile.keeps_epoch_cache and k == len(leader_log) and chooser.integer(0, leftovers) == 0:
            # hw-truncation: records past the leader's log end (an unclean election's or a
            # power failure's leftovers, so more often where unclean election is on): its
            # next fetch is out of range above (FOLLOWER-OOR-1/2)
            replica["log"] += [f"x{name}{i}@{chooser.integer(0, epoch)}" for i in range(chooser.integer(1, 2))]
        elif chooser.integer(0, 1):
            isr.append(name)
            shared = min(shared, k)
        replicas[name] = replica
        prefix[name] = k
    hw = chooser.integer(0, shared)
    replicas[leader] = {"log": leader_log, "hw": hw}
    followers = [name for name in replicas if name != leader]
    for name in followers:
        replicas[name]["hw"] = chooser.integer(0, min(hw, prefix[name]))
    # a log start at most every ISR member's HW: a follower that restarted its log there
    # has its HW there, and no ISR member's HW lags one outside the ISR by more
    limit = min([hw, *diverged, *(replicas[n]["hw"] for n in followers if n in isr)])
    if limit and chooser.integer(0, 1) == 0:
        # the leader's records below its log start are gone (LOG-START-1): a follower
        # further behind is out of range
        start = chooser.integer(1, limit)
        replicas[leader] = {"log_start": start, "log": leader_log[start:], "hw": hw}
        for name in followers:
            if name in isr or chooser.integer(0, 1):
                continue
            # a follower that already started its log over at the leader's log start
            # (LOG-START-3): an empty epoch cache and HW at its log start, and sometimes
            # (epoch generations) a record of an epoch the leader never wrote there, which
            # a divergence may cut below that start (LOG-START-2)
            older = [e for e in range(epoch) if e not in epochs[start:] and e not in tails]
            leftover: list[str] = []
            if profile.keeps_epoch_cache and older and chooser.integer(0, 1):
                # each such epoch at most once, as above: two followers with different
                # records of one epoch at one offset is a state no leader makes (INIT-6)
                tails.add(chosen := pick(chooser, older))
                leftover = [f"x{name}{start}@{chosen}"]
            restarted: dict[str, Any] = {"log_start": start, "log": leftover, "hw": start}
            if profile.asks_epoch_before_fetch:
                restarted["fetch_state"] = "truncating"
            replicas[name] = restarted
    drawn = {
        "leader": leader,
        "leader_epoch": epoch,
        "isr": [r for r in config.replicas if r in isr],
        "replicas": replicas,
    }
    if followers and chooser.integer(1, DOWN_ONE_IN) == 1:
        # a broker down whose failure the controller has not handled yet (the next
        # election handles it, CTRL-FAIL-*; a restart brings it back, RESTART-*)
        replicas[pick(chooser, followers)]["online"] = False
    if chooser.integer(1, LEADERLESS_ONE_IN) == 1:
        # no leader: the controller handled the leader's failure and has not elected since
        # (the brokers are up again, nobody leads; the next election picks from the ISR)
        drawn["leader"] = None
    try:
        given = normalise(config, drawn)
        initial_state(config, given)
    except InitialStateError:
        return None
    return given


def configs(generation: Generation, sizes: Sequence[int] = (2, 3, 4, 5)) -> Any:
    """The same configs as a hypothesis strategy (for property tests)."""
    from hypothesis import strategies as st

    @st.composite
    def build(draw: Any) -> Config:
        return draw_config(DataChooser(draw), generation, sizes)

    return build()


# --- weights ---------------------------------------------------------------------------


class WeightsError(ValueError):
    """A ``--weights`` text that does not parse; the message says which part."""


def parse_weights(text: str, base: Mapping[str, int] | None = None) -> dict[str, int]:
    """``"fetch=30,crash=0"`` over ``base`` (default ``WEIGHTS``)."""
    from reference_impl import STEP_TYPES

    out = dict(WEIGHTS if base is None else base)
    known = set(STEP_TYPES) | set(COMBINED)
    for part in filter(None, (p.strip() for p in text.split(","))):
        name, sep, value = part.partition("=")
        name = name.strip()
        if not sep or name not in known:
            raise WeightsError(f"--weights: {part!r}: expected KIND=WEIGHT with KIND one of {', '.join(sorted(known))}")
        try:
            weight = int(value)
        except ValueError:
            raise WeightsError(f"--weights: {part!r}: the weight must be a whole number") from None
        if weight < 0:
            raise WeightsError(f"--weights: {part!r}: the weight must not be negative")
        out[name] = weight
    return out


# --- steps -----------------------------------------------------------------------------

SWARM_DROP = 4
"""In a swarm run each kind is left out with probability 1 / SWARM_DROP."""


def swarm(chooser: Chooser, weights: Mapping[str, int]) -> dict[str, int]:
    """Weights for one run, swarm-testing style (Groce et al., "Swarm Testing", ISSTA 2012):
    every other run leaves a random few kinds out, so runs differ in character (no crash at
    all, no consume, no refused steps, ...) and rare interleavings of the remaining kinds
    come up more often. Fetch, its delivery and produce always stay."""
    if chooser.integer(0, 1) == 0:
        return dict(weights)
    kept = ("fetch", "deliver_fetch", "produce")
    return {k: w if k in kept or chooser.integer(1, SWARM_DROP) > 1 else 0 for k, w in weights.items()}


Lower = Callable[[Step], Step | None]
"""A step in the form the implementation performs, or None if it cannot (``stateful.proposal``)."""


def draw_tick(chooser: Chooser, config: Config) -> int:
    """A timer's edge (``tick_lengths``), or (one time in ``WHOLE_RANGE``) any length up
    to one past the longest timer."""
    lengths = tick_lengths(config)
    if chooser.integer(1, WHOLE_RANGE) == 1:
        return chooser.integer(1, max(lengths) + 1)
    return int(pick(chooser, lengths))


def tick_lengths(config: Config) -> tuple[int, ...]:
    """The tick lengths drawn: around every timer's edge, and 1 ms."""
    lag = config.replica_lag_time_max_ms
    lengths = [1, config.replica_fetch_wait_max_ms, lag // 2, lag - 1, lag, lag + 1, config.request_timeout_ms]
    if config.replica_high_watermark_checkpoint_interval_ms:
        lengths.append(config.replica_high_watermark_checkpoint_interval_ms)
    return tuple(dict.fromkeys(ms for ms in lengths if ms > 0))


def with_rounds(steps: Sequence[Step]) -> list[Step]:
    """``steps`` and, for each fetch and epoch request among them, its whole round
    (``fetch_round``, ``epoch_round``: the request and, when answered at once, its answer in
    one step, FETCH-ROUND-1 and EPOCH-ROUND-1), which ``enabled_steps`` does not list: an
    implementation with both forms is drawn both."""
    out = list(steps)
    for step in steps:
        if isinstance(step, Fetch):
            out.append(FetchRound(step.replica, step.max_records, step.max_wait_ms))
        elif isinstance(step, EpochRequest):
            out.append(EpochRound(step.replica))
    return out


def enabled_by_kind(state: State, lower: Lower | None = None) -> dict[str, list[Step]]:
    """The enabled steps and whole rounds (lowered for the implementation), grouped by
    kind, plus the combined steps when they would take more than one step."""
    by_kind: dict[str, list[Step]] = {}
    for step in with_rounds(enabled_steps(state)):
        if lower is None:
            by_kind.setdefault(step.kind, []).append(step)
            continue
        proposed = lower(step)
        if proposed is not None:
            group = by_kind.setdefault(proposed.kind, [])
            if proposed not in group:
                group.append(proposed)
    fetches = by_kind.get("fetch") or by_kind.get("fetch_round") or []
    if len(fetches) > 1:
        by_kind["fetch_all"] = fetches
    if len(by_kind.get("deliver_fetch", ())) > 1:
        by_kind["deliver_all"] = by_kind["deliver_fetch"]
    return by_kind


def refused_steps(state: State, lower: Lower | None = None) -> list[Step]:
    """Candidate steps (``reference_impl.enabled.candidate_steps``) that are not enabled."""
    allowed = set(enabled_steps(state))
    others = [c for c in candidate_steps(state) if c not in allowed]
    return others if lower is None else [p for p in map(lower, others) if p is not None]


def draw_steps(
    chooser: Chooser,
    state: State,
    weights: Mapping[str, int] = WEIGHTS,
    lower: Lower | None = None,
    honours: Callable[[Step], bool] | None = None,
    refused: bool = True,
    previous: Step | None = None,
) -> list[Step]:
    """One weighted choice in ``state``: one step, or several for a combined step; empty
    when nothing is enabled (or every enabled kind has weight 0).

    ``lower``: the step in the form the implementation performs (None: as it is).
    ``honours``: whether the implementation honours a step's optional fields (a step it
    does not is drawn with its defaults). ``refused``: also draw steps that are not enabled.
    ``previous``: the step taken last; half the refused steps drawn repeat it when it is
    refused now (a second request while the first is in flight, a restart of a broker just
    restarted: the duplicate an implementation forgets to refuse). The others are drawn
    half uniformly among the refused steps, half kind first."""
    by_kind = enabled_by_kind(state, lower)
    kinds = [k for k in by_kind if weights.get(k, OTHER_WEIGHT) > 0]
    if refused and weights.get(REFUSED, OTHER_WEIGHT) > 0:
        kinds.append(REFUSED)  # computed only when drawn (most steps are not)
    if not kinds:
        return []
    kind = kinds[chooser.weighted([weights.get(k, OTHER_WEIGHT) for k in kinds])]
    if kind == REFUSED:
        others = refused_steps(state, lower)
        again = [o for o in others if previous is not None and _same_request(o, previous)]
        if again and chooser.integer(0, 1) == 0:
            return [pick(chooser, again)]
        if others and chooser.integer(0, 1) == 0:
            return [pick(chooser, others)]
        if others:
            # or a kind first, then one of its refused steps, as for the enabled ones: a
            # refusal of a rarely refused kind (a second fetch in flight) is not drowned
            # by the many refusals of another (every replica's deliveries with nothing in flight)
            kinds_refused = list(dict.fromkeys(step.kind for step in others))
            kind_refused = pick(chooser, kinds_refused)
            return [pick(chooser, [step for step in others if step.kind == kind_refused])]
        return draw_steps(chooser, state, weights, lower, honours, refused=False)
    if kind in COMBINED:
        return by_kind[kind]
    step = pick(chooser, by_kind[kind])
    varied = vary(chooser, state, step, refused)
    return [varied if honours is None or honours(varied) else step]


def _same_request(candidate: Step, previous: Step) -> bool:
    """Whether ``candidate`` is ``previous`` sent again (its kind, by the same replica)."""
    return candidate.kind == previous.kind and getattr(candidate, "replica", None) == getattr(previous, "replica", None)


def vary(chooser: Chooser, state: State, step: Step, refused: bool = True) -> Step:
    """``step`` with its free parameters drawn (the precondition does not depend on them,
    except the few the reference rejects, which the fuzzer then skips). ``refused``: a
    parameter the reference refuses may be drawn (a crash's ``unflushed_from`` past the log
    end); without it every drawn step is enabled."""
    config = state.config
    if isinstance(step, Produce):
        acks = pick_weighted(chooser, [("all", 5), ("1", 3), ("0", 1)])
        extra = 0 if chooser.integer(0, 4) else chooser.integer(1, 2)
        values = (*step.values, *(f"{step.values[0]}{'bcd'[i]}" for i in range(extra)))
        to = pick(chooser, config.replicas) if chooser.integer(0, 9) == 0 else None
        return replace(step, acks=acks, values=values, to=to)
    if isinstance(step, Tick):
        return Tick(ms=draw_tick(chooser, config))
    if isinstance(step, Fetch | FetchRound):
        if chooser.integer(0, 4) == 0:
            # 1 most often (one record a fetch); sometimes any count up to the longest log
            top = max(1, max(r.leo for r in state.replicas))
            step = replace(step, max_records=1 if chooser.integer(0, 1) else chooser.integer(1, top))
        if chooser.integer(0, 4) == 0:
            # 0: answered at once, never parked; otherwise a wait of its own, below or above the config's
            wait = 0 if chooser.integer(0, 1) else chooser.integer(1, 2 * config.replica_fetch_wait_max_ms)
            step = replace(step, max_wait_ms=wait)
        return step
    if isinstance(step, EpochQuery):
        # -1 to one past the controller's epoch: -1 is the wire's undefined epoch, as the
        # epoch asked for and as the current leader epoch (EPOCH-QUERY-3)
        epoch = chooser.integer(-1, state.controller.epoch + 1)
        current = chooser.integer(-1, state.controller.epoch + 1) if chooser.integer(0, 1) else None
        return replace(step, epoch=epoch, current_leader_epoch=current)
    if isinstance(step, Consume):
        top = max(r.leo for r in state.replicas)
        return Consume(offset=chooser.integer(0, top + 1) if chooser.integer(0, 2) == 0 else 0)
    if isinstance(step, Elect):
        if chooser.integer(0, 2):
            return step
        notify = tuple(r for r in config.replicas if chooser.integer(0, 1))
        return replace(step, notify=notify)
    if isinstance(step, Crash):
        replica = state.replica(step.replica)
        if replica.leo == 0 or chooser.integer(0, 3):
            return step
        # mostly the tail above the HW; sometimes below it (the HW checkpoint can be ahead
        # of what reached the disk: Kafka flushes the log and the checkpoint independently)
        if refused and chooser.integer(0, 7) == 0:  # past the log end: refused (CRASH-PRE-1)
            return replace(step, unflushed_from=replica.leo + 1)
        low = min(replica.hw, replica.leo) if chooser.integer(0, 1) else 0
        return replace(step, unflushed_from=chooser.integer(low, replica.leo))
    return step


def simpler(step: Step) -> list[Step]:
    """Simpler forms of ``step`` for shrinking: optional fields back to their defaults, a
    tick of 1 ms, a consume from 0."""
    out: list[Step] = []
    for f in fields(step):
        if f.default is MISSING:
            continue
        if getattr(step, f.name) != f.default:
            out.append(replace(step, **{f.name: f.default}))
    if isinstance(step, Produce) and len(step.values) > 1:
        out.append(replace(step, values=step.values[:1]))
    if isinstance(step, Tick) and step.ms > 1:
        out.append(Tick(ms=1))
    return out
