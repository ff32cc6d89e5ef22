"""The produce purgatory: acks=all produces waiting for the HW, and outcomes.

An acks=all produce waits (``DelayedProduce``) until the leader's HW reaches the end of
what it appended (``Partition.checkEnoughReplicasReachOffset``). Also the one place that
records a producer's outcome and the history of committed records.
"""

from __future__ import annotations

from collections.abc import Sequence

from .alter_partition import maximal_isr
from .draft import Draft
from .messages import PendingProduce
from .state import ProduceOutcome
from .values import evolve


def record_outcome(d: Draft, outcome: ProduceOutcome) -> None:
    """Add a producer's outcome, or update it in place (outcomes keep send order)."""
    position = d.produces.find(outcome.id)
    if position is None:
        d.produces = d.produces.append(outcome)
    else:
        d.produces = d.produces.replace(position, outcome)


def outcome_of(d: Draft, produce_id: str) -> ProduceOutcome:
    position = d.produces.find(produce_id)
    if position is None:
        raise KeyError(produce_id)
    return d.produces[position]


def commit(d: Draft, records: Sequence[tuple[int, str, int]]) -> None:
    """Add records acknowledged or consumed to the committed history (once each)."""
    new = d.committed.missing(records)
    if new:
        d.committed = d.committed.extend(new)


def _remove(d: Draft, pending: PendingProduce) -> None:
    d.pending_produces = tuple([p for p in d.pending_produces if p != pending])


def maybe_complete_produces(d: Draft, leader_id: str) -> None:
    """PRODUCE-5: a waiting acks=all produce completes once the leader's HW reaches its
    end offset: acked, or NOT_ENOUGH_REPLICAS_AFTER_APPEND if the ISR shrank below
    ``min.insync.replicas`` meanwhile (diverging-epoch: the maximal ISR, trunk
    ``checkEnoughReplicasReachOffset``)."""
    if not d.pending_produces:
        return
    leader = d.replicas[d.position[leader_id]]
    for pending in list(d.pending_produces):
        if pending.leader != leader_id or leader.hw < pending.required_offset:
            continue
        outcome = outcome_of(d, pending.id)
        enough = len(maximal_isr(d, leader_id)) >= d.config.min_insync_replicas
        status = "acked" if enough else "NOT_ENOUGH_REPLICAS_AFTER_APPEND"
        _remove(d, pending)
        record_outcome(d, evolve(outcome, status=status))
        d.fired.append("PRODUCE-5")
        if enough:
            commit(d, outcome.records)


def fail_pending_produces(d: Draft, leader_id: str, error: str, rule: str) -> None:
    """PRODUCE-6: the leader crashed (NETWORK_EXCEPTION) or stopped leading
    (NOT_LEADER_OR_FOLLOWER): its waiting produces end with that error."""
    if not d.pending_produces:
        return
    for pending in list(d.pending_produces):
        if pending.leader != leader_id:
            continue
        outcome = outcome_of(d, pending.id)
        _remove(d, pending)
        record_outcome(d, evolve(outcome, status=error))
        d.fired.append(rule)


def expire_produce(d: Draft, pending: PendingProduce) -> None:
    """PRODUCE-7: an acks=all produce still waiting at its deadline gets REQUEST_TIMED_OUT
    (the records stay in the log and may still be committed later)."""
    outcome = outcome_of(d, pending.id)
    _remove(d, pending)
    record_outcome(d, evolve(outcome, status="REQUEST_TIMED_OUT"))
    d.fired.append("PRODUCE-7")
