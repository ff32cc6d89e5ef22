"""The richer steps ``kconform explore`` can add to its alphabet (``--partial-fetches``,
``--timer-ticks``, ``--epoch-queries``, ``--in-flight``; docs/explore.md).

The plain alphabet (``explore.alphabet``) fetches everything the leader has, ticks by two
fixed lengths, and leaves out the client's epoch question. Faults that hide in between
need more: a fetch that returns one record where the leader has more (HW-FOLLOWER-1's
min with the LEO, FETCH-LEADER-3), time stopping one millisecond before, at and after a
timer (a follower's lag, a parked fetch's or a produce's deadline, the next periodic
ISR check or HW checkpoint), elections whose LeaderAndIsr stays in flight to some
broker, and epoch questions (EPOCH-QUERY-*). Each is a flag because each multiplies the
states per level; ``Richer`` adds the steps that are enabled in a state, built only from
what the state holds, so the search stays exhaustive over the larger alphabet.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from reference_impl import State, Step
from reference_impl.alter_partition import changes_isr
from reference_impl.state import LEADER
from reference_impl.steps import Elect, EpochQuery, Fetch, Tick


@dataclass(frozen=True)
class Richer:
    """Which richer steps to add; calling it gives them for one state."""

    partial_fetches: bool = False
    """``fetch`` with ``max_records: 1`` by a follower whose leader has two or more
    records past the follower's LEO."""
    timer_ticks: bool = False
    """Ticks to 1 ms before, at and 1 ms after each timer that can fire next (``timers``)."""
    epoch_queries: bool = False
    """``epoch_query`` of every live broker for the current epoch and the one before."""
    in_flight: bool = False
    """Every election also notifying no broker at once, and each live broker alone (the
    others' LeaderAndIsr stays in flight until ``deliver_leader_and_isr``)."""

    @property
    def any(self) -> bool:
        return self.partial_fetches or self.timer_ticks or self.epoch_queries or self.in_flight

    def __call__(self, state: State, enabled: list[Step]) -> list[Step]:
        out: list[Step] = []
        if self.partial_fetches:
            out += partial_fetches(state, enabled)
        if self.timer_ticks:
            have = {s.ms for s in enabled if isinstance(s, Tick)}
            out += [Tick(ms=ms) for ms in timer_ticks(state) if ms not in have]
        if self.epoch_queries:
            out += epoch_queries(state)
        if self.in_flight:
            out += elections_in_flight(state, enabled)
        return out

    def flags(self) -> str:
        names = ["partial-fetches", "timer-ticks", "epoch-queries", "in-flight"]
        on = [self.partial_fetches, self.timer_ticks, self.epoch_queries, self.in_flight]
        return ",".join(n for n, o in zip(names, on, strict=True) if o) or "plain"


PLAIN = Richer()
"""No richer step: the plain alphabet."""
EVERYTHING = Richer(partial_fetches=True, timer_ticks=True, epoch_queries=True, in_flight=True)


def partial_fetches(state: State, enabled: list[Step]) -> list[Step]:
    """For each enabled full fetch whose follower is two or more records behind its
    leader, the same fetch capped at one record."""
    out: list[Step] = []
    for step in enabled:
        if isinstance(step, Fetch) and step.max_records is None:
            follower = state.replica(step.replica)
            if follower.leader is not None and state.replica(follower.leader).leo - follower.leo >= 2:
                out.append(replace(step, max_records=1))
    return out


def timers(state: State) -> list[int]:
    """Milliseconds from now to each timer that can fire next: parked fetches' and
    produces' deadlines (FETCH-PARK-3, PRODUCE-7); on a leader that changes the ISR
    (``changes_isr``: the current one; under diverging-epoch any in its own view), the moment each
    ISR follower's lag passes ``replica.lag.time.max.ms`` (ISR-SHRINK-1/2) and the next
    run of the ISR check (every lag / 2 from the broker's start); each live broker's next
    HW checkpoint run (CKPT-2). Only those in the future."""
    now = state.clock_ms
    cfg = state.config
    at = [p.deadline_ms for p in state.parked_fetches] + [p.deadline_ms for p in state.pending_produces]
    lag = cfg.replica_lag_time_max_ms
    period = max(1, lag // 2)
    interval = cfg.replica_high_watermark_checkpoint_interval_ms
    for replica in state.replicas:
        if not replica.online:
            continue
        if interval > 0:
            at.append(_next_run(replica.started_ms, interval, now))
        if replica.role is LEADER and changes_isr(state, replica):  # DE: also an older epoch's (ISR-ALTER-5)
            at.append(_next_run(replica.started_ms, period, now))
            at += [p.last_caught_up_ms + lag for p in replica.progress if p.last_caught_up_ms is not None]
    return sorted({t - now for t in at if t > now})


def _next_run(started: int, period: int, now: int) -> int:
    """The first run of a task started at ``started`` with ``period`` after ``now``."""
    if now < started:
        return started
    return started + ((now - started) // period + 1) * period


def timer_ticks(state: State) -> list[int]:
    """Tick lengths to 1 ms before, at and 1 ms after each of ``timers``."""
    out: set[int] = set()
    for d in timers(state):
        out.update(ms for ms in (d - 1, d, d + 1) if ms > 0)
    return sorted(out)


def epoch_queries(state: State) -> list[Step]:
    """A client's OffsetsForLeaderEpoch to every live broker, for the controller's current
    epoch and the one before it (EPOCH-QUERY-*); only where brokers keep a cache."""
    if not state.config.profile.keeps_epoch_cache:
        return []
    epoch = state.controller.epoch
    epochs = [e for e in (epoch, epoch - 1) if e >= 0]
    return [EpochQuery(replica=r.id, epoch=e) for r in state.replicas if r.online for e in epochs]


def elections_in_flight(state: State, enabled: list[Step]) -> list[Step]:
    """Each enabled election also notifying nobody at once, and each live broker alone
    (with two live brokers, "each alone" is ``explore --faults``' "all but one": both are
    kept, deduplicated by the search)."""
    live = [r.id for r in state.replicas if r.online]
    out: list[Step] = []
    for step in enabled:
        if isinstance(step, Elect) and step.notify is None and live:
            out.append(replace(step, notify=()))
            if len(live) > 1:
                out += [replace(step, notify=(r,)) for r in live]
    return out


__all__ = [
    "EVERYTHING",
    "PLAIN",
    "Richer",
    "elections_in_flight",
    "epoch_queries",
    "partial_fetches",
    "timer_ticks",
    "timers",
]
