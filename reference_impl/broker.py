"""A broker's life: crash and restart.

A crash is a process crash: memory is lost (the in-memory HW, the leader's view of its
followers, parked requests, messages to and from it), the log and the two checkpoint
files (HW, leader epochs) survive. A restart reads them back and asks the controller
who leads (LeaderAndIsr on startup).
"""

from __future__ import annotations

from .errors import StepRejected
from .follower import become_follower
from .leader import abort_parked_fetches
from .purgatory import fail_pending_produces
from .replica_ops import truncate
from .state import FetchState, Role, State
from .values import evolve


def crash(state: State, replica_id: str, unflushed_from: int | None = None) -> State:
    """CRASH-1: the broker dies. CRASH-2: with ``unflushed_from``, a power failure also
    loses the log's unflushed tail (log recovery truncates it and the epoch cache)."""
    if replica_id not in state.config.replicas:
        raise StepRejected("CRASH-PRE-1", f"crash: unknown replica {replica_id!r}")
    replica = state.replica(replica_id)
    if not replica.online:
        raise StepRejected("CRASH-PRE-1", f"crash: replica {replica_id} is already offline")
    state = abort_parked_fetches(state, replica_id, error=None)
    state = fail_pending_produces(state, replica_id, "NETWORK_EXCEPTION", "PRODUCE-6")
    state = evolve(
        state,
        # Its own parked fetches at other leaders stay parked there: that leader does
        # not know; their responses are dropped on arrival (MSG-DROP-1).
        fetch_responses=tuple(r for r in state.fetch_responses if r.dst != replica_id),
        epoch_responses=tuple(r for r in state.epoch_responses if r.dst != replica_id),
        leader_and_isr=tuple(m for m in state.leader_and_isr if m.dst != replica_id),
    )
    state = state.with_replica(
        evolve(replica, online=False, role=Role.NONE, progress=(), fetch_state=FetchState.FETCHING)
    ).fire("CRASH-1")
    if unflushed_from is not None:
        if unflushed_from > replica.leo:
            raise StepRejected(
                "CRASH-PRE-1", f"crash: unflushed_from={unflushed_from} is past {replica_id}'s LEO {replica.leo}"
            )
        state = truncate(state, replica_id, unflushed_from, rule="CRASH-2")
        if unflushed_from < replica.leo:
            state = evolve(state, power_failures=state.power_failures + 1)
        # The HW checkpoint may now point past the log; restart clamps it (RESTART-1).
    return state


def restart(state: State, replica_id: str) -> State:
    """RESTART-1: the broker starts, HW = its checkpoint (clamped to the LEO), and takes
    the role the controller gives it now."""
    if replica_id not in state.config.replicas:
        raise StepRejected("RESTART-PRE-1", f"restart: unknown replica {replica_id!r}")
    replica = state.replica(replica_id)
    if replica.online:
        raise StepRejected("RESTART-PRE-1", f"restart: replica {replica_id} is online")
    ctrl = state.controller
    if ctrl.leader == replica_id:
        raise StepRejected(
            "RESTART-PRE-1",
            f"restart: the controller still records {replica_id} as leader; run `elect` first "
            "(the controller handles a broker's failure before it can re-register)",
        )
    restored_hw = min(replica.checkpoint_hw, replica.leo)
    state = state.with_replica(
        evolve(
            replica,
            online=True,
            hw=restored_hw,
            role=Role.NONE,
            leader=None,
            leader_epoch=ctrl.epoch,
            started_ms=state.clock_ms,
            incarnation=replica.incarnation + 1,
        )
    ).fire("RESTART-1")
    if ctrl.leader is None:
        return state
    return become_follower(state, replica_id, ctrl.leader, ctrl.epoch)
