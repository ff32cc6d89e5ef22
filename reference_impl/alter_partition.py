"""ISR changes the leader proposes to the controller (KIP-497 AlterIsr, AlterPartition
from 3.2): the proposal in flight, and the "maximal ISR" the leader counts meanwhile.

Under ``diverging-epoch`` (2.7+ with IBP 2.7-IV2, and KRaft) a leader does not write the
ISR itself: it sends a proposal, at most one at a time, and until the controller's answer
commits it the leader counts the *maximal* ISR toward its HW (a joining follower counts at
once, a leaving one until the shrink is committed). A leader proposes while it leads in its
own view (ISR-ALTER-5): one whose new LeaderAndIsr has not arrived proposes at the epoch it
knows, the controller fences it, and the leader waits on the fenced proposal until its new
LeaderAndIsr arrives (ISR-ALTER-4, ISR-ALTER-5). Earlier generations write the ISR to
ZooKeeper directly and at once (``Partition.updateIsr``), at the same leader epoch. The
controller's side (``controller.deliver_alter_partition``) answers the proposal.
"""

from __future__ import annotations

from .draft import Draft, Readable
from .messages import AlterPartition
from .state import LEADER, Replica
from .values import evolve


def changes_isr(d: Readable, leader: Replica) -> bool:
    """Whether ``leader`` runs ISR changes (ISR-SHRINK-*, ISR-EXPAND-*) now (a state or a
    draft: the search's step pruning asks it too, ``conformance/search``).

    Under ``diverging-epoch`` the leader knows only its own leader epoch
    (``Partition.maybeShrinkIsr`` / ``maybeExpandIsr`` test ``leaderLogIfLocal``), so one
    whose new LeaderAndIsr has not arrived still proposes, and the controller fences it
    (ISR-ALTER-4, ISR-ALTER-5). Under ZooKeeper such a leader's conditional write fails on
    the znode version and nothing changes (ISR-WRITE-1), which the model writes as not
    running the change at all."""
    if d.config.profile.isr_change_via_alter_partition:
        # ISR-ALTER-5: a leader proposes while it leads in its own view, whatever the controller's epoch.
        return leader.online and leader.role is LEADER
    return d.is_current_leader(leader)  # ZooKeeper: an older epoch's conditional write fails


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


def pending(d: Draft, leader_id: str) -> bool:
    """ISR-ALTER-1: one ISR change at a time (``PartitionState.isInflight``): a proposal of
    ``leader_id`` in flight, or one the controller fenced that it still waits on (ISR-ALTER-5).
    An abandoned one in flight counts too (ISR-ALTER-6): the leader's state is committed, but
    ``DefaultAlterPartitionManager.submit`` refuses a second request for the partition until
    the first is answered (``OPERATION_NOT_ATTEMPTED``, and the leader resets again), so no
    change happens meanwhile."""
    if not d.alter_partitions and not d.fenced_proposals:
        return False
    return any(p.leader == leader_id for p in d.alter_partitions) or any(
        p.leader == leader_id for p in d.fenced_proposals
    )


def maximal_isr(d: Draft, leader_id: str) -> tuple[str, ...]:
    """ISR-ALTER-1: the ISR ``leader_id`` counts: the committed ISR it knows (PRODUCE-2) plus a
    member whose joining it has pending (``PendingExpandIsr.maximalIsr``); a member whose
    leaving is pending still counts (``PendingShrinkIsr.maximalIsr`` is the committed ISR).
    A proposal the leader abandoned (ISR-ALTER-6) adds nothing: its state is the committed one."""
    isr = leader_isr(d, d.replicas[d.position[leader_id]])
    if not d.alter_partitions and not d.fenced_proposals:
        return isr
    proposals = (*d.alter_partitions, *d.fenced_proposals)
    proposed = {r for p in proposals if p.leader == leader_id and not p.abandoned for r in p.isr}
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
    """A leader that crashes or takes a new LeaderAndIsr forgets its proposal, in flight or
    fenced (Kafka resets ``partitionState`` to the committed state; the controller would
    refuse one in flight anyway)."""
    if d.alter_partitions:
        d.alter_partitions = tuple([p for p in d.alter_partitions if p.leader != leader_id])
    if d.fenced_proposals:
        d.fenced_proposals = tuple([p for p in d.fenced_proposals if p.leader != leader_id])


def abandon_proposals(d: Draft, leader_id: str) -> None:
    """The leader ``leader_id`` applies a newer partition record at its own leader epoch
    (KRaft metadata: CTRL-FAIL-3, CTRL-FENCE-1): ``Partition.makeLeader`` →
    ``updateAssignmentAndIsr`` resets its state to ``CommittedPartitionState``, so a pending
    change no longer counts in its maximal ISR. Its request stays in flight; the controller
    refuses it (the record raised the partition epoch) and the leader ignores the answer
    (``submitAlterPartition``: ``partitionState != proposedIsrState``)."""
    if any(p.leader == leader_id and not p.abandoned for p in d.alter_partitions):
        d.alter_partitions = tuple(
            [evolve(p, abandoned=True) if p.leader == leader_id else p for p in d.alter_partitions]
        )
        d.fired.append("ISR-ALTER-6")
