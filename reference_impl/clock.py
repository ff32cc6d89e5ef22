"""Time passing: ``tick`` runs, in time order, every timer that falls due.

Timers, and their order when several fall on the same millisecond (TICK-1):

1. parked fetches reaching ``replica.fetch.wait.max.ms`` (FETCH-PARK-3);
2. acks=all produces reaching their request timeout (PRODUCE-7);
3. each leader's ``isr-expiration`` task, every ``replica.lag.time.max.ms / 2`` from
   its broker's start (ISR-SHRINK-*);
4. each broker's ``highwatermark-checkpoint`` task, every
   ``replica.high.watermark.checkpoint.interval.ms`` from its start (CKPT-2);
5. each broker's ``kafka-log-start-offset-checkpoint`` task, ``log.initial.task.delay.ms``
   after its start and every ``log.flush.start.offset.checkpoint.interval.ms`` from then
   (CKPT-3). It only makes a raised log start durable, which no other timer reads, so
   where it falls among them changes nothing.

Between steps nothing else moves, so a periodic task only needs to run where it can
change something: the ISR check at the first run after a follower starts lagging, the
checkpoint at its last run before the HW can next change. That keeps a long tick cheap
without changing its outcome.
"""

from __future__ import annotations

from . import alter_partition
from . import isr as isr_rules
from .draft import Draft
from .fetch_purgatory import complete_parked_fetch
from .isr import maybe_shrink_isr
from .purgatory import expire_produce
from .state import LEADER
from .values import evolve


def _isr_check_period(d: Draft) -> int:
    return max(1, d.config.replica_lag_time_max_ms // 2)


def _first_run_at_or_after(started: int, period: int, t: int) -> int:
    if t <= started:
        return started
    k = -(-(t - started) // period)
    return started + k * period


def _next_isr_check(d: Draft, after: int, end: int) -> int | None:
    """The first ``isr-expiration`` run in ``(after, end]`` that would drop a follower, over
    the brokers that run ISR changes (``changes_isr``: the current leader; under
    diverging-epoch also a leader of an older epoch in its own view, ISR-ALTER-5)."""
    period = _isr_check_period(d)
    best: int | None = None
    for leader in d.replicas:
        if leader.role is not LEADER or not leader.progress or not alter_partition.changes_isr(d, leader):
            continue
        if (d.alter_partitions or d.fenced_proposals) and alter_partition.pending(d, leader.id):
            continue  # a leader with an ISR change pending changes nothing (ISR-ALTER-1)
        isr = alter_partition.leader_isr(d, leader)  # the ISR it knows
        for progress in leader.progress:
            if progress.replica not in isr:
                continue
            since = isr_rules.out_of_sync_from(d, leader, progress)  # looked up here: the zoo replaces it
            if since is None:
                continue
            run = _first_run_at_or_after(leader.started_ms, period, max(after + 1, since))
            if run <= end and (best is None or run < best):
                best = run
    return best


def _checkpoint_runs(d: Draft, after: int, before: int, inclusive: bool) -> None:
    """CKPT-2: each live broker's last checkpoint run in ``(after, before)`` (or
    ``(after, before]``) writes its HW to the checkpoint file."""
    interval = d.config.replica_high_watermark_checkpoint_interval_ms
    if interval == 0:
        return
    limit = before if inclusive else before - 1
    if limit <= after:
        return
    for replica in list(d.replicas):
        if not replica.online:
            continue
        k = (limit - replica.started_ms) // interval
        last_run = replica.started_ms + k * interval
        if last_run > after and replica.checkpoint_hw != replica.hw:
            d.put(evolve(replica, checkpoint_hw=replica.hw))
            d.fired.append("CKPT-2")


LOG_INITIAL_TASK_DELAY_MS = 30_000
"""``log.initial.task.delay.ms`` (``ServerLogConfigs.LOG_INITIAL_TASK_DELAY_MS_DEFAULT``; 2.6:
``LogManager.InitialTaskDelayMs``): when a broker's LogManager first runs its periodic tasks."""
LOG_START_CHECKPOINT_INTERVAL_MS = 60_000
"""``log.flush.start.offset.checkpoint.interval.ms`` (default 60000)."""


def _log_start_checkpoint_runs(d: Draft, after: int, end: int) -> None:
    """CKPT-3: a live broker whose log start rose since its last checkpoint run (LOG-START-4)
    writes it at the task's first run in ``(after, end]``: from then a crash keeps it."""
    for replica in list(d.replicas):
        if not replica.unchecked_below or not replica.online:
            continue
        first = replica.started_ms + LOG_INITIAL_TASK_DELAY_MS
        run = _first_run_at_or_after(first, LOG_START_CHECKPOINT_INTERVAL_MS, after + 1)
        if run <= end:
            d.put(evolve(replica, unchecked_below=()))
            d.fired.append("CKPT-3")


def tick(d: Draft, ms: int) -> None:
    """TICK-1: advance the clock by ``ms``, firing due timers in time order.

    A timer fires once: each pass looks for deadlines after the last time it fired
    (``fired``; at first, from the current time on). In the reference a timer that fires is
    removed, so this is every timer due by ``end``; a timer whose effect is skipped (a
    knockout of FETCH-PARK-3 or PRODUCE-7) then stays, unfired, instead of being found
    due for ever."""
    end = d.clock_ms + ms
    cursor = d.clock_ms
    fired = cursor - 1
    d.fired.append("TICK-1")
    _log_start_checkpoint_runs(d, cursor, end)
    while True:
        candidates = (
            [p.deadline_ms for p in d.parked_fetches if fired < p.deadline_ms <= end] if d.parked_fetches else []
        )
        if d.pending_produces:
            candidates += [p.deadline_ms for p in d.pending_produces if fired < p.deadline_ms <= end]
        isr_run = _next_isr_check(d, cursor, end)
        if isr_run is not None:
            candidates.append(isr_run)
        if not candidates:
            _checkpoint_runs(d, cursor, end, inclusive=True)
            d.clock_ms = end
            return
        t = max(min(candidates), cursor)
        _checkpoint_runs(d, cursor, t, inclusive=False)
        d.clock_ms = t
        for parked in [p for p in d.parked_fetches if fired < p.deadline_ms <= t]:
            complete_parked_fetch(d, parked, "FETCH-PARK-3")
        for pending in [p for p in d.pending_produces if fired < p.deadline_ms <= t]:
            expire_produce(d, pending)
        if isr_run == t:
            for leader in tuple(d.replicas):
                if (
                    leader.role is LEADER
                    and alter_partition.changes_isr(d, leader)
                    and (t - leader.started_ms) % _isr_check_period(d) == 0
                ):
                    maybe_shrink_isr(d, leader.id)
        # Checkpoint runs at exactly t come after the events of t.
        _checkpoint_runs(d, t - 1, t, inclusive=True)
        cursor = fired = t
