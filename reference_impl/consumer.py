"""What a consumer may read: records strictly below the leader's HW.

The seeds write the visible range as ``[0, HW]`` (004) and say records "<= HW" are
replicated (000); Kafka serves ``[fetch offset, HW)`` to consumers
(``FetchHighWatermark`` isolation in ``ReplicaManager.readFromLocalLog``).
"""

from __future__ import annotations

from .draft import Draft
from .purgatory import commit
from .state import LEADER, ConsumeOutcome
from .steps import Consume


def consume(d: Draft, step: Consume, limit: int | None = None) -> None:
    """CONSUME-1: read from ``offset`` at the leader, up to (not including) its HW.
    CONSUME-2: no live leader, or an offset past the LEO or below the log start, is an error.
    ``limit``: at most that many records (CHOICE-5, ``choices.consume_at_most``; None, all of
    them, everywhere in ``apply``)."""
    leader_id = d.controller.leader
    offset = step.offset

    def error(name: str) -> None:
        d.consumed = ConsumeOutcome(replica=leader_id, offset=offset, records=(), hw=None, error=name)
        d.fired.append("CONSUME-2")

    if leader_id is None:
        return error("LEADER_NOT_AVAILABLE")
    leader = d.replicas[d.position[leader_id]]
    if not leader.online:
        return error("NETWORK_EXCEPTION")
    if leader.role is not LEADER:
        return error("NOT_LEADER_OR_FOLLOWER")
    if offset > leader.leo or offset < leader.log_start:
        return error("OFFSET_OUT_OF_RANGE")
    end = leader.hw if limit is None else min(leader.hw, offset + limit)
    records = leader.log.read_entries(offset, end)
    d.consumed = ConsumeOutcome(replica=leader_id, offset=offset, records=records, hw=leader.hw, error=None)
    d.fired.append("CONSUME-1")
    commit(d, records)
    return None
