"""The produce purgatory: acks=all produces waiting for the HW, and outcomes.

An acks=all produce waits (``DelayedProduce``) until the leader's HW reaches the end of
what it appended (``Partition.checkEnoughReplicasReachOffset``). Also the one place that
records a producer's outcome and the history of committed records.
"""

from __future__ import annotations

from .messages import PendingProduce
from .state import ProduceOutcome, State
from .values import evolve


def record_outcome(state: State, outcome: ProduceOutcome) -> State:
    """Add a producer's outcome, or update it in place (outcomes keep send order)."""
    if any(o.id == outcome.id for o in state.produces):
        return evolve(state, produces=tuple(outcome if o.id == outcome.id else o for o in state.produces))
    return evolve(state, produces=(*state.produces, outcome))


def commit(state: State, records: tuple[tuple[int, str, int], ...]) -> State:
    new = tuple(r for r in records if r not in state.committed)
    return evolve(state, committed=state.committed + new) if new else state


def maybe_complete_produces(state: State, leader_id: str) -> State:
    """PRODUCE-5: a waiting acks=all produce completes once the leader's HW reaches its
    end offset: acked, or NOT_ENOUGH_REPLICAS_AFTER_APPEND if the ISR shrank below
    ``min.insync.replicas`` meanwhile."""
    leader = state.replica(leader_id)
    for pending in state.pending_produces:
        if pending.leader != leader_id or leader.hw < pending.required_offset:
            continue
        outcome = next(o for o in state.produces if o.id == pending.id)
        enough = len(state.controller.isr) >= state.config.min_insync_replicas
        status = "acked" if enough else "NOT_ENOUGH_REPLICAS_AFTER_APPEND"
        state = evolve(state, pending_produces=tuple(p for p in state.pending_produces if p != pending))
        state = record_outcome(state, evolve(outcome, status=status))
        state = state.fire("PRODUCE-5")
        if enough:
            state = commit(state, outcome.records)
    return state


def fail_pending_produces(state: State, leader_id: str, error: str, rule: str) -> State:
    """PRODUCE-6: the leader crashed (NETWORK_EXCEPTION) or stopped leading
    (NOT_LEADER_OR_FOLLOWER): its waiting produces end with that error."""
    for pending in state.pending_produces:
        if pending.leader != leader_id:
            continue
        outcome = next(o for o in state.produces if o.id == pending.id)
        state = evolve(state, pending_produces=tuple(p for p in state.pending_produces if p != pending))
        state = record_outcome(state, evolve(outcome, status=error)).fire(rule)
    return state


def expire_produce(state: State, pending: PendingProduce) -> State:
    """PRODUCE-7: an acks=all produce still waiting at its deadline gets REQUEST_TIMED_OUT
    (the records stay in the log and may still be committed later)."""
    outcome = next(o for o in state.produces if o.id == pending.id)
    state = evolve(state, pending_produces=tuple(p for p in state.pending_produces if p != pending))
    return record_outcome(state, evolve(outcome, status="REQUEST_TIMED_OUT")).fire("PRODUCE-7")
