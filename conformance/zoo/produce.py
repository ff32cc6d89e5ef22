"""Produce members (historical-bugs.md entries 14-18)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from reference_impl import State, clock, hw_advance, purgatory
from reference_impl.draft import Draft
from reference_impl.messages import PendingProduce
from reference_impl.purgatory import commit, outcome_of, record_outcome
from reference_impl.replica_ops import truncate
from reference_impl.values import evolve

from .base import ALL, Mutant, Patch, member, on_draft


def _ack(d: Draft, pending: PendingProduce, status: str = "acked") -> None:
    outcome = outcome_of(d, pending.id)
    d.pending_produces = tuple(p for p in d.pending_produces if p != pending)
    record_outcome(d, evolve(outcome, status=status))
    d.fire("PRODUCE-5")
    if status == "acked":
        commit(d, outcome.records)


@member(
    "acks-all-acked-on-append",
    14,
    "plausible misreading of seed 004 (DelayedProduce)",
    ALL,
    ("PRODUCE-5",),
)
class AcksAllAckedOnAppend(Mutant):
    """acks=all is acknowledged right after the append, as acks=1."""

    def after(self, before: State, after: State, step: dict[str, Any]) -> State:
        new = [p for p in after.pending_produces if p not in before.pending_produces]
        if not new:
            return after

        def ack(d: Draft) -> None:
            for pending in new:
                _ack(d, pending)

        return on_draft(after, ack)


@member(
    "acks-all-ignores-min-insync",
    15,
    "before KAFKA-1555 (0.8.2): no min.insync.replicas",
    ALL,
    ("PRODUCE-2", "PRODUCE-5"),
    config={"min_insync_replicas": 1},
)
class AcksAllIgnoresMinInsync(Mutant):
    """min.insync.replicas is never checked: an ISR of one acknowledges acks=all."""


@member(
    "no-not-enough-replicas-after-append",
    16,
    "plausible: Partition.checkEnoughReplicasReachOffset without its second half",
    ("hw-truncation", "leader-epoch"),
    ("PRODUCE-5",),
)
class NoNotEnoughReplicasAfterAppend(Mutant):
    """A waiting acks=all produce the HW reached is acked even if the ISR shrank below
    min.insync.replicas meanwhile. Equivalent under diverging-epoch: the 3.7 gate
    (HW-LEADER-3) keeps the HW still while the ISR is below min.insync.replicas, so the
    HW never reaches a waiting produce then."""

    def patches(self) -> Iterable[Patch]:
        def complete(d: Draft, leader_id: str) -> None:
            leader = d.replica(leader_id)
            for pending in list(d.pending_produces):
                if pending.leader == leader_id and leader.hw >= pending.required_offset:
                    _ack(d, pending)

        return [(hw_advance, "maybe_complete_produces", complete)]


@member("acks-all-waits-for-every-replica", 17, "seed 004 misreading (erratum E10)", ALL, ("PRODUCE-5",))
class AcksAllWaitsForEveryReplica(Mutant):
    """acks=all completes only when every replica's LEO reached the record, not when the
    HW did: a dead follower blocks it although the ISR dropped it."""

    def patches(self) -> Iterable[Patch]:
        def complete(d: Draft, leader_id: str) -> None:
            leader = d.replica(leader_id)
            reached = min(
                (p.remote_leo if p.remote_leo is not None else -1 for p in leader.progress), default=leader.leo
            )
            enough = len(d.controller.isr) >= d.config.min_insync_replicas
            for pending in list(d.pending_produces):
                required = pending.required_offset
                if pending.leader == leader_id and leader.hw >= required and reached >= required:
                    _ack(d, pending, "acked" if enough else "NOT_ENOUGH_REPLICAS_AFTER_APPEND")

        return [(hw_advance, "maybe_complete_produces", complete)]


@member("timed-out-produce-removes-records", 18, "plausible misreading of request.timeout.ms", ALL, ("PRODUCE-7",))
class TimedOutProduceRemovesRecords(Mutant):
    """At REQUEST_TIMED_OUT the leader removes the produce's records from its log."""

    def patches(self) -> Iterable[Patch]:
        original = purgatory.expire_produce

        def expire(d: Draft, pending: PendingProduce) -> None:
            records = outcome_of(d, pending.id).records
            original(d, pending)
            if records and d.replica(pending.leader).online:
                truncate(d, pending.leader, records[0][0], rule="PRODUCE-7")

        return [(clock, "expire_produce", expire)]
