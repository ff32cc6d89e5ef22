"""ISR changes the leader proposes to the controller (KIP-497 AlterIsr, AlterPartition
from 3.2): the proposal in flight, and the "maximal ISR" the leader counts meanwhile.

Under ``diverging-epoch`` (2.7+ with IBP 2.7-IV2, and KRaft) a leader does not write the
ISR itself: it sends a proposal, at most one at a time, and until the controller's answer
commits it the leader counts the *maximal* ISR toward its HW (a joining follower counts at
once, a leaving one until the shrink is committed). Earlier generations write the ISR to
ZooKeeper directly and at once (``Partition.updateIsr``), at the same leader epoch. The
controller's side (``controller.deliver_alter_partition``) answers the proposal.
"""

from __future__ import annotations

from .draft import Draft, Readable
from .messages import AlterPartition
from .state import Replica
from .values import evolve


def leader_isr(s: Readable, leader: Replica) -> tuple[str, ...]:
    """PRODUCE-2: the ISR a leader knows (2.6 ``Partition.inSyncReplicaIds``, trunk
    ``partitionState.isr``). While it leads the controller's epoch that is the controller's
    record: every change at that epoch reaches it at once (its own write, ISR-WRITE-1; an
    AlterPartition answer, ISR-ALTER-2; KRaft metadata, CTRL-FAIL-3). A leader whose next
    LeaderAndIsr is still in flight knows the ISR of the epoch it led (``Replica.isr``)."""
    return s.controller.isr if s.is_current_leader(leader) else leader.isr


def remember_leader_isr(d: Draft) -> None:
    """Before the controller moves the leader epoch on (a new leader, or a ZooKeeper ISR
    removal, CTRL-FAIL-1): its current leader keeps the ISR it knows until the LeaderAndIsr
    reaches it (``Partition.makeLeader`` is where the leader learns the new one)."""
    ctrl = d.controller
    if ctrl.leader is None:
        return
    leader = d.replicas[d.position[ctrl.leader]]
    if d.is_current_leader(leader) and leader.isr != ctrl.isr:
        # PRODUCE-2: what it knows stays the ISR of the epoch it led
        d.put(evolve(leader, isr=ctrl.isr))


def in_flight(d: Draft, leader_id: str) -> bool:
    """ISR-ALTER-1: one ISR change in flight at a time (``PartitionState.isInflight``)."""
    if not d.alter_partitions:
        return False
    return any(p.leader == leader_id for p in d.alter_partitions)


def maximal_isr(d: Draft, leader_id: str) -> tuple[str, ...]:
    """ISR-ALTER-1: the committed ISR the leader knows plus a member whose joining is in
    flight (``PendingExpandIsr.maximalIsr``); a member whose leaving is in flight still
    counts (``PendingShrinkIsr.maximalIsr`` is the committed ISR)."""
    isr = leader_isr(d, d.replicas[d.position[leader_id]])
    if not d.alter_partitions:
        return isr
    proposed = {r for p in d.alter_partitions if p.leader == leader_id for r in p.isr}
    return tuple([r for r in d.config.replicas if r in isr or r in proposed])


def change_isr(d: Draft, leader_id: str, new_isr: tuple[str, ...]) -> bool:
    """Change the ISR as the leader's generation does; True if it is committed at once.

    ISR-ALTER-1 (diverging-epoch): send an AlterPartition carrying the leader's epoch and
    the partition epoch it knows; nothing is committed until the answer (ISR-ALTER-2).
    Otherwise the leader's ZooKeeper write commits at once, same leader epoch, next
    partition epoch (znode version), ``Partition.updateIsr`` (0.10.1, 2.6)."""
    ctrl = d.controller
    if d.profile.isr_change_via_alter_partition:
        leader = d.replicas[d.position[leader_id]]
        proposal = AlterPartition(
            leader=leader_id, leader_epoch=leader.leader_epoch, partition_epoch=ctrl.partition_epoch, isr=new_isr
        )
        d.alter_partitions = (*d.alter_partitions, proposal)
        d.fired.append("ISR-ALTER-1")
        return False
    # ISR-WRITE-1: the leader's own ZooKeeper write, committed at once.
    d.controller = evolve(ctrl, isr=new_isr, partition_epoch=ctrl.partition_epoch + 1)
    d.fired.append("ISR-WRITE-1")
    return True


def drop_proposals(d: Draft, leader_id: str) -> None:
    """A leader that crashes or takes a new LeaderAndIsr forgets its proposal (Kafka resets
    ``partitionState`` to the committed state; the controller would refuse it anyway)."""
    if in_flight(d, leader_id):
        d.alter_partitions = tuple([p for p in d.alter_partitions if p.leader != leader_id])
