"""The produce path: a producer's request reaches the leader and is appended.

acks 0 and 1 are answered at once; acks=all is handed to the produce purgatory
(``purgatory.py``). Mirrors ``Partition.appendRecordsToLeader``.
"""

from __future__ import annotations

from . import epoch_cache
from .alter_partition import leader_isr
from .draft import Draft, Readable
from .errors import StepRejected
from .fetch_purgatory import wake_parked_fetches
from .hw_advance import maybe_increment_hw
from .log import Record
from .messages import PendingProduce
from .state import LEADER, ProduceOutcome
from .steps import Produce
from .values import evolve


def _fail(d: Draft, step: Produce, produce_id: str, error: str, rule: str) -> None:
    """A produce refused before the append: its outcome is the error (``sent`` for acks=0,
    whose producer hears nothing)."""
    d.fired.append(rule)
    d.produces = d.produces.append(ProduceOutcome(produce_id, step.acks, "sent" if step.acks == "0" else error))


def produce_refused(s: Readable, step: Produce) -> StepRejected | None:
    """PRODUCE-PRE-1: a produce's id (given, or the automatic ``p<n>``) is new in the run,
    and ``to``, when given, names a replica."""
    produce_id = step.id or f"p{len(s.produces) + 1}"
    if s.produces.find(produce_id) is not None:
        return StepRejected("PRODUCE-PRE-1", f"produce id {produce_id!r} is already used in this run")
    if step.to is not None and step.to not in s.config.position:
        return StepRejected("PRODUCE-PRE-1", f"produce.to names unknown replica {step.to!r}")
    return None


def produce(d: Draft, step: Produce) -> None:
    """PRODUCE-1..5: a producer sends ``step.values`` to the leader. Its outcome is new
    (PRODUCE-PRE-1), so it is appended to the outcomes without looking for an old one."""
    if (refused := produce_refused(d, step)) is not None:
        raise refused
    produce_id = step.id or f"p{len(d.produces) + 1}"
    target = step.to if step.to is not None else d.controller.leader

    # PRODUCE-1: the request must reach a live leader.
    if target is None:
        return _fail(d, step, produce_id, "LEADER_NOT_AVAILABLE", "PRODUCE-1")
    leader = d.replicas[d.position[target]]
    if not leader.online:
        return _fail(d, step, produce_id, "NETWORK_EXCEPTION", "PRODUCE-1")
    if leader.role is not LEADER:
        return _fail(d, step, produce_id, "NOT_LEADER_OR_FOLLOWER", "PRODUCE-1")

    # PRODUCE-2: acks=all is refused before the append when the ISR the leader knows is too small.
    if step.acks == "all" and len(leader_isr(d, leader)) < d.config.min_insync_replicas:
        return _fail(d, step, produce_id, "NOT_ENOUGH_REPLICAS", "PRODUCE-2")

    # PRODUCE-3: append, stamped with the leader's epoch.
    base = leader.leo
    epoch = leader.leader_epoch
    records = tuple([Record(value, epoch) for value in step.values])
    cache = leader.epoch_cache
    if d.profile.keeps_epoch_cache:
        cache = epoch_cache.assign(cache, epoch, base)
    d.put(evolve(leader, log=leader.log.extend(records), epoch_cache=cache))
    d.fired.append("PRODUCE-3")
    appended = tuple([(base + i, value, epoch) for i, value in enumerate(step.values)])

    if step.acks == "all":
        pending = PendingProduce(
            id=produce_id,
            leader=target,
            required_offset=base + len(records),
            deadline_ms=d.clock_ms + d.config.request_timeout_ms,
        )
        d.pending_produces = (*d.pending_produces, pending)
        d.produces = d.produces.append(ProduceOutcome(produce_id, "all", "pending", appended))
        d.fired.append("PRODUCE-5")
    else:
        outcome = ProduceOutcome(produce_id, step.acks, "acked" if step.acks == "1" else "sent", appended)
        d.produces = d.produces.append(outcome)
        d.fired.append("PRODUCE-4")

    # The HW may move at once (an ISR of one; HW-LEADER-1 then completes waiting
    # produces), and parked fetches now have data.
    maybe_increment_hw(d, target)
    wake_parked_fetches(d, target)
    return None
