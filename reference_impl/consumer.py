"""What a consumer may read: records strictly below the leader's HW.

The seeds write the visible range as ``[0, HW]`` (004) and say records "<= HW" are
replicated (000); Kafka serves ``[fetch offset, HW)`` to consumers
(``FetchHighWatermark`` isolation in ``ReplicaManager.readFromLocalLog``).
"""

from __future__ import annotations

from .purgatory import commit
from .state import ConsumeOutcome, Role, State
from .steps import Consume
from .values import evolve


def consume(state: State, step: Consume) -> State:
    """CONSUME-1: read from ``offset`` at the leader, up to (not including) its HW.
    CONSUME-2: no live leader, or an offset past the LEO, is an error."""
    leader_id = state.controller.leader
    offset = step.offset

    def error(name: str) -> State:
        outcome = ConsumeOutcome(replica=leader_id, offset=offset, records=(), hw=None, error=name)
        return evolve(state, consumed=outcome).fire("CONSUME-2")

    if leader_id is None:
        return error("LEADER_NOT_AVAILABLE")
    leader = state.replica(leader_id)
    if not leader.online:
        return error("NETWORK_EXCEPTION")
    if leader.role is not Role.LEADER:
        return error("NOT_LEADER_OR_FOLLOWER")
    if offset > leader.leo:
        return error("OFFSET_OUT_OF_RANGE")
    records = tuple((o, leader.log[o].value, leader.log[o].epoch) for o in range(offset, leader.hw))
    outcome = ConsumeOutcome(replica=leader_id, offset=offset, records=records, hw=leader.hw, error=None)
    state = evolve(state, consumed=outcome).fire("CONSUME-1")
    return commit(state, records)
