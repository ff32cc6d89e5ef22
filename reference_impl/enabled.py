"""The steps enabled in a state: the choices a generator (or a model checker) has.

``candidate_steps`` lists a few representative steps (tick lengths, acks levels);
``enabled_steps`` keeps those whose preconditions hold, read straight from the spec's
PRE rules (STEP-PRE-1, PRODUCE-PRE-1, FETCH-PRE-1, EPOCH-PRE-1, EPOCH-QUERY-PRE-1, the
DELIVER-PRE rules, ISR-SHRINK-PRE-1, ISR-ALTER-PRE-1, CRASH-PRE-1, RESTART-PRE-1,
CTRL-ELECT-PRE-1, CTRL-ELECT-4, CTRL-FENCE-PRE-1, LAI-PRE-1) without applying
anything. ``tests/test_enabled.py`` checks it against trying each candidate on the
reference, on random states.
"""

from __future__ import annotations

from .state import FOLLOWER, TRUNCATING, State
from .steps import (
    Consume,
    Crash,
    DeliverAlterPartition,
    DeliverEpoch,
    DeliverFetch,
    DeliverLeaderAndIsr,
    Elect,
    EpochQuery,
    EpochRequest,
    Fetch,
    HeartbeatLapse,
    IsrExpiration,
    Produce,
    Restart,
    Step,
    Tick,
)


def candidate_steps(state: State) -> list[Step]:
    cfg = state.config
    seq = len(state.produces) + 1
    steps: list[Step] = [
        Produce(values=(f"v{seq}",), acks="all"),
        Produce(values=(f"v{seq}",), acks="1"),
        Tick(ms=cfg.replica_fetch_wait_max_ms),
        Tick(ms=cfg.replica_lag_time_max_ms // 2),
        Consume(offset=0),
        Elect(),
    ]
    for name in cfg.replicas:
        steps += [
            Fetch(replica=name),
            DeliverFetch(replica=name),
            EpochRequest(replica=name),
            DeliverEpoch(replica=name),
            Crash(replica=name),
            Restart(replica=name),
            DeliverLeaderAndIsr(replica=name),
            Elect(leader=name),
            EpochQuery(replica=name, epoch=state.controller.epoch),
            IsrExpiration(replica=name),
            DeliverAlterPartition(replica=name),
            HeartbeatLapse(replica=name),
        ]
    return steps


def _follows_live_leader(state: State, name: str) -> bool:
    """The common part of FETCH-PRE-1 and EPOCH-PRE-1."""
    replica = state.replica(name)
    return (
        replica.online
        and replica.role is FOLLOWER
        and replica.leader is not None
        and state.replica(replica.leader).online
    )


def enabled_steps(state: State) -> list[Step]:
    """Every candidate step whose precondition holds in ``state``, in candidate order."""
    cfg = state.config
    ctrl = state.controller
    seq = len(state.produces) + 1
    steps: list[Step] = []
    if state.produces.find(f"p{seq}") is None:  # PRODUCE-PRE-1: the automatic id is free
        steps += [Produce(values=(f"v{seq}",), acks="all"), Produce(values=(f"v{seq}",), acks="1")]
    steps += [Tick(ms=cfg.replica_fetch_wait_max_ms), Tick(ms=cfg.replica_lag_time_max_ms // 2), Consume(offset=0)]
    unhandled = any(not r.online and r.id not in ctrl.down for r in state.replicas)
    if ctrl.leader is None or unhandled:  # CTRL-ELECT-PRE-1
        steps.append(Elect())
    fetch_to = {r.dst for r in state.fetch_responses}
    epoch_to = {r.dst for r in state.epoch_responses}
    lai_to = {m.dst for m in state.leader_and_isr}
    asks_epoch = cfg.profile.asks_epoch_before_fetch
    keeps_cache = cfg.profile.keeps_epoch_cache
    proposing = {p.leader for p in state.alter_partitions}
    kraft = not cfg.profile.isr_removal_bumps_leader_epoch
    for replica in state.replicas:
        name = replica.id
        following = _follows_live_leader(state, name)
        if (
            following
            and replica.fetch_state is not TRUNCATING
            and name not in fetch_to
            and not any(p.follower == name and p.incarnation == replica.incarnation for p in state.parked_fetches)
        ):  # FETCH-PRE-1
            steps.append(Fetch(replica=name))
        if name in fetch_to:  # FETCH-DELIVER-PRE-1
            steps.append(DeliverFetch(replica=name))
        if asks_epoch and following and replica.fetch_state is TRUNCATING and name not in epoch_to:
            steps.append(EpochRequest(replica=name))  # EPOCH-PRE-1
        if name in epoch_to:  # EPOCH-DELIVER-PRE-1
            steps.append(DeliverEpoch(replica=name))
        if replica.online:  # CRASH-PRE-1
            steps.append(Crash(replica=name))
        else:  # RESTART-PRE-1
            steps.append(Restart(replica=name))
        if name in lai_to:  # LAI-PRE-1
            steps.append(DeliverLeaderAndIsr(replica=name))
        if replica.online and name in ctrl.isr:  # CTRL-ELECT-4
            steps.append(Elect(leader=name))
        if keeps_cache and replica.online:  # EPOCH-QUERY-PRE-1
            steps.append(EpochQuery(replica=name, epoch=ctrl.epoch))
        if replica.online:  # ISR-SHRINK-PRE-1
            steps.append(IsrExpiration(replica=name))
        if name in proposing:  # ISR-ALTER-PRE-1
            steps.append(DeliverAlterPartition(replica=name))
        if kraft and replica.online and name != ctrl.leader:  # CTRL-FENCE-PRE-1
            steps.append(HeartbeatLapse(replica=name))
    return steps
