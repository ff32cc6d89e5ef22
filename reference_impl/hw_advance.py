"""When and how far a leader's HW moves (HW-LEADER-1, HW-LEADER-2).

The formula itself is ``hw.leader_hw``; this module decides which LEOs count and
completes the acks=all produces the new HW satisfies.
"""

from __future__ import annotations

from . import hw
from .alter_partition import leader_isr, maximal_isr
from .draft import Draft
from .purgatory import maybe_complete_produces
from .replica_ops import set_hw
from .state import LEADER, Replica


def counted_leos(d: Draft, leader: Replica) -> list[int | None]:
    """HW-LEADER-2: the LEOs that bound the leader's HW.

    hw-truncation (0.10 ``Partition.maybeIncrementLeaderHW``): the leader and the ISR.
    Epoch generations (0.11+): also followers caught up within ``replica.lag.time.max.ms``
    that are not (yet) in the ISR, so a catching-up follower is not outrun.
    With an AlterPartition proposal of this leader pending (ISR-ALTER-1; in flight, or fenced
    and waited on, ISR-ALTER-5): its maximal ISR, not only the committed one. With
    ``hw_skips_fenced_brokers`` a caught-up follower counts only while ISR-eligible
    (``Partition.isReplicaIsrEligible``): not fenced, i.e. not a broker whose failure the
    controller handled (KIP-841), and its last fetch to this leader carried its current
    broker epoch (KIP-903).
    """
    isr = maximal_isr(d, leader.id)
    eligible_only = d.profile.hw_skips_fenced_brokers
    fenced = d.controller.down if eligible_only else ()
    lag = d.config.replica_lag_time_max_ms
    counts_caught_up = d.profile.hw_counts_caught_up
    now = d.clock_ms
    leos: list[int | None] = [leader.leo]
    for progress in leader.progress:
        caught_up = (
            counts_caught_up
            and progress.last_caught_up_ms is not None
            and now - progress.last_caught_up_ms <= lag
            and progress.replica not in fenced
        )
        if (
            caught_up
            and eligible_only
            and progress.replica not in isr
            and progress.broker_epoch != d.replicas[d.position[progress.replica]].incarnation
        ):
            # HW-LEADER-4 (KIP-903): no fetch since this replica became leader (broker epoch
            # None), or none since the follower restarted (an older incarnation's epoch).
            d.fired.append("HW-LEADER-4")
            caught_up = False
        if caught_up or progress.replica in isr:
            leos.append(progress.remote_leo)
    return leos


def maybe_increment_hw(d: Draft, leader_id: str) -> None:
    """HW-LEADER-1: the leader's HW becomes max(HW, min(counted LEOs)), unless HW-LEADER-3
    freezes it; then any acks=all produce whose offset is now below the HW completes
    (PRODUCE-5)."""
    leader = d.replicas[d.position[leader_id]]
    if not leader.online or leader.role is not LEADER:
        return
    new_hw = hw.leader_hw(leader.hw, counted_leos(d, leader))
    if new_hw == leader.hw:
        return
    if d.profile.hw_frozen_under_min_isr and len(leader_isr(d, leader)) < d.config.min_insync_replicas:
        # HW-LEADER-3 (3.7+, KAFKA-15583): Partition.maybeIncrementLeaderHW returns at once
        # while the committed ISR is below min.insync.replicas (isUnderMinIsr).
        d.fired.append("HW-LEADER-3")
        return
    set_hw(d, leader_id, new_hw)
    d.fired.extend(("HW-LEADER-1", "HW-LEADER-2"))
    maybe_complete_produces(d, leader_id)
