"""The produce path: a producer's request reaches the leader and is appended.

acks 0 and 1 are answered at once; acks=all is handed to the produce purgatory
(``purgatory.py``). Mirrors ``Partition.appendRecordsToLeader``.
"""

from __future__ import annotations

from . import epoch_cache
from .errors import StepRejected
from .leader import maybe_increment_hw, wake_parked_fetches
from .log import Record
from .messages import PendingProduce
from .purgatory import record_outcome
from .state import ProduceOutcome, Role, State
from .steps import Produce
from .values import evolve


def produce(state: State, step: Produce) -> State:
    """PRODUCE-1..5: a producer sends ``step.values`` to the leader."""
    produce_id = step.id or f"p{len(state.produces) + 1}"
    if any(o.id == produce_id for o in state.produces):
        raise StepRejected("PRODUCE-PRE-1", f"produce id {produce_id!r} is already used in this run")
    target = step.to if step.to is not None else state.controller.leader

    def fail(error: str, rule: str) -> State:
        status = "sent" if step.acks == "0" else error
        return record_outcome(state.fire(rule), ProduceOutcome(produce_id, step.acks, status))

    # PRODUCE-1: the request must reach a live leader.
    if target is None:
        return fail("LEADER_NOT_AVAILABLE", "PRODUCE-1")
    if target not in state.config.replicas:
        raise StepRejected("PRODUCE-PRE-1", f"produce.to names unknown replica {target!r}")
    leader = state.replica(target)
    if not leader.online:
        return fail("NETWORK_EXCEPTION", "PRODUCE-1")
    if leader.role is not Role.LEADER:
        return fail("NOT_LEADER_OR_FOLLOWER", "PRODUCE-1")

    # PRODUCE-2: acks=all is refused before the append when the ISR is too small.
    if step.acks == "all" and len(state.controller.isr) < state.config.min_insync_replicas:
        return fail("NOT_ENOUGH_REPLICAS", "PRODUCE-2")

    # PRODUCE-3: append, stamped with the leader's epoch.
    base = leader.leo
    records = tuple(Record(value, leader.leader_epoch) for value in step.values)
    cache = leader.epoch_cache
    if state.config.generation.uses_epochs:
        cache = epoch_cache.assign(cache, leader.leader_epoch, base)
    state = state.with_replica(evolve(leader, log=leader.log + records, epoch_cache=cache))
    state = state.fire("PRODUCE-3")
    appended = tuple((base + i, r.value, r.epoch) for i, r in enumerate(records))

    if step.acks == "all":
        pending = PendingProduce(
            id=produce_id,
            leader=target,
            required_offset=base + len(records),
            deadline_ms=state.clock_ms + state.config.request_timeout_ms,
        )
        state = evolve(state, pending_produces=(*state.pending_produces, pending))
        state = record_outcome(state, ProduceOutcome(produce_id, "all", "pending", appended))
        state = state.fire("PRODUCE-5")
    else:
        status = "acked" if step.acks == "1" else "sent"
        state = record_outcome(state, ProduceOutcome(produce_id, step.acks, status, appended))
        state = state.fire("PRODUCE-4")

    # The HW may move at once (an ISR of one; HW-LEADER-1 then completes waiting
    # produces), and parked fetches now have data.
    state = maybe_increment_hw(state, target)
    return wake_parked_fetches(state, target)
