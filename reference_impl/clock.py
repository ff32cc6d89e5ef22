"""Time passing: ``tick`` runs, in time order, every timer that falls due.

Timers, and their order when several fall on the same millisecond (TICK-1):

1. parked fetches reaching ``replica.fetch.wait.max.ms`` (FETCH-PARK-3);
2. acks=all produces reaching their request timeout (PRODUCE-7);
3. each leader's ``isr-expiration`` task, every ``replica.lag.time.max.ms / 2`` from
   its broker's start (ISR-SHRINK-*);
4. each broker's ``highwatermark-checkpoint`` task, every
   ``replica.high.watermark.checkpoint.interval.ms`` from its start (CKPT-2).

Between steps nothing else moves, so a periodic task only needs to run where it can
change something: the ISR check at the first run after a follower starts lagging, the
checkpoint at its last run before the HW can next change. That keeps a long tick cheap
without changing its outcome.
"""

from __future__ import annotations

from .leader import complete_parked_fetch, is_current_leader, maybe_shrink_isr
from .purgatory import expire_produce
from .state import State
from .values import evolve


def _isr_check_period(state: State) -> int:
    return max(1, state.config.replica_lag_time_max_ms // 2)


def _first_run_at_or_after(started: int, period: int, t: int) -> int:
    if t <= started:
        return started
    k = -(-(t - started) // period)
    return started + k * period


def _next_isr_check(state: State, after: int, end: int) -> int | None:
    """The first ``isr-expiration`` run in ``(after, end]`` that would drop a follower."""
    lag = state.config.replica_lag_time_max_ms
    best: int | None = None
    for leader in state.replicas:
        if not is_current_leader(state, leader):
            continue
        for progress in leader.progress:
            if progress.replica not in state.controller.isr:
                continue
            if state.config.generation.uses_epochs and progress.remote_leo == leader.leo:
                continue
            lagging_from = after + 1
            if progress.last_caught_up_ms is not None:
                lagging_from = max(lagging_from, progress.last_caught_up_ms + lag + 1)
            run = _first_run_at_or_after(leader.started_ms, _isr_check_period(state), lagging_from)
            if run <= end and (best is None or run < best):
                best = run
    return best


def _checkpoint_runs(state: State, after: int, before: int, inclusive: bool) -> State:
    """CKPT-2: each live broker's last checkpoint run in ``(after, before)`` (or
    ``(after, before]``) writes its HW to the checkpoint file."""
    interval = state.config.replica_high_watermark_checkpoint_interval_ms
    if interval == 0:
        return state
    limit = before if inclusive else before - 1
    for replica in state.replicas:
        if not replica.online or limit <= after:
            continue
        k = (limit - replica.started_ms) // interval
        last_run = replica.started_ms + k * interval
        if last_run > after and replica.checkpoint_hw != replica.hw:
            state = state.with_replica(evolve(replica, checkpoint_hw=replica.hw)).fire("CKPT-2")
    return state


def tick(state: State, ms: int) -> State:
    """TICK-1: advance the clock by ``ms``, firing due timers in time order."""
    end = state.clock_ms + ms
    cursor = state.clock_ms
    state = state.fire("TICK-1")
    while True:
        candidates = [p.deadline_ms for p in state.parked_fetches if p.deadline_ms <= end]
        candidates += [p.deadline_ms for p in state.pending_produces if p.deadline_ms <= end]
        isr_run = _next_isr_check(state, cursor, end)
        if isr_run is not None:
            candidates.append(isr_run)
        if not candidates:
            state = _checkpoint_runs(state, cursor, end, inclusive=True)
            return evolve(state, clock_ms=end)
        t = max(min(candidates), cursor)
        state = _checkpoint_runs(state, cursor, t, inclusive=False)
        state = evolve(state, clock_ms=t)
        for parked in [p for p in state.parked_fetches if p.deadline_ms <= t]:
            state = complete_parked_fetch(state, parked, "FETCH-PARK-3")
        for pending in [p for p in state.pending_produces if p.deadline_ms <= t]:
            state = expire_produce(state, pending)
        if isr_run == t:
            for leader in state.replicas:
                if is_current_leader(state, leader) and (t - leader.started_ms) % _isr_check_period(state) == 0:
                    state = maybe_shrink_isr(state, leader.id)
        # Checkpoint runs at exactly t come after the events of t.
        state = _checkpoint_runs(state, t - 1, t, inclusive=True)
        cursor = t
