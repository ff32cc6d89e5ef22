"""The controller: elects leaders, bumps the epoch, tells brokers (LeaderAndIsr).

Mirrors the ZooKeeper controller's ``OfflinePartitionLeaderElectionStrategy`` (clean
and unclean), its handling of a broker's failure (``onBrokerFailure``: election, then
removal from every ISR) and the preferred-replica election, with each broker learning the
decision through a LeaderAndIsr message that may stay in flight; and its answer to a
leader's AlterPartition.
"""

from __future__ import annotations

from .alter_partition import abandon_proposals, drop_proposals, remember_leader_isr
from .draft import Draft, Readable
from .errors import StepRejected
from .fetch_purgatory import abort_parked_fetches
from .hw_advance import maybe_increment_hw
from .messages import LeaderAndIsr
from .network import drop_unreachable_answers
from .purgatory import fail_pending_produces
from .roles import become_follower, become_leader, become_leaderless
from .state import LEADER, Controller
from .steps import Elect
from .values import evolve


def unhandled_failures(s: Readable) -> list[str]:
    """Offline brokers whose failure the controller has not handled yet, in replica order."""
    down = s.controller.down
    return [r.id for r in s.replicas if not r.online and r.id not in down]  # replicas are in replica order


def handle_failures(d: Draft, notify: tuple[str, ...] | None, prefer: str | None = None) -> None:
    """CTRL-FAIL-*: the controller handles the failure of every broker that went down since
    it last looked (ZooKeeper: ``KafkaController.onBrokerFailure`` once the broker's session
    ended; KRaft: ``ReplicationControlManager.handleBrokerFenced``). First the partition,
    if its leader is among them, gets a new leader (CTRL-ELECT-1/2); if none can lead,
    each dead ISR member is removed from the ISR in turn (CTRL-FAIL-1/2). ``prefer``: see
    ``_offline_election``."""
    dead = unhandled_failures(d)
    before = d.controller
    d.controller = evolve(before, down=tuple([r for r in d.config.replicas if r in before.down or r in dead]))
    elected = False
    if before.leader is None or before.leader in dead:
        elected = _offline_election(d, prefer)
    if not elected:
        for replica_id in dead:
            _remove_from_isr(d, replica_id)
        if before.leader in dead:
            d.fired.append("CTRL-ELECT-3")
    _send_leader_and_isr(d, before, notify)
    ctrl = d.controller
    if ctrl.epoch == before.epoch and ctrl.isr != before.isr and ctrl.leader is not None:
        _leader_applies_isr_record(d, ctrl.leader)


def _leader_applies_isr_record(d: Draft, leader_id: str) -> None:
    """KRaft: the leader takes an ISR change at its own leader epoch as metadata
    (``ReplicaManager.applyLocalLeadersDelta`` → ``Partition.makeLeader``): its state becomes
    the committed one, dropping a pending proposal from its maximal ISR (ISR-ALTER-6; a
    leader whose new epoch is still in flight has applied neither, PRODUCE-2), and it retries
    its HW, as every ``makeLeader`` ends."""
    d.fired.append("CTRL-FAIL-3")
    if d.alter_partitions and d.is_current_leader(d.replicas[d.position[leader_id]]):
        abandon_proposals(d, leader_id)
    maybe_increment_hw(d, leader_id)


def _offline_election(d: Draft, prefer: str | None = None) -> bool:
    """CTRL-ELECT-1/2: elect for a partition without a live leader; False if nobody may lead
    (CTRL-ELECT-3: then nothing is written by the election itself). ``prefer``: an eligible
    replica elected instead of the first in replica order (CHOICE-3, ``choices.elect_preferring``;
    None, Kafka's own choice, everywhere in ``apply``); ignored if it is not eligible."""
    ctrl = d.controller
    replicas = d.config.replicas
    online = [r.id for r in d.replicas if r.online]
    live_isr = [r for r in ctrl.isr if r in online]
    if live_isr:
        # CTRL-ELECT-1: first live ISR member in replica order; ISR = live ISR.
        ordered = [r for r in replicas if r in live_isr]
        first = prefer if prefer in ordered else ordered[0]
        new_leader, new_isr, rule = first, tuple(ordered), "CTRL-ELECT-1"
    elif d.config.unclean_leader_election and online:
        # CTRL-ELECT-2: unclean: first live replica; the ISR is the leader alone.
        first = prefer if prefer in online else online[0]
        new_leader, new_isr, rule = first, (first,), "CTRL-ELECT-2"
        d.unclean_elections += 1
    else:
        return False
    # CTRL-ELECT-5: epoch + 1.
    d.controller = evolve(
        ctrl, leader=new_leader, epoch=ctrl.epoch + 1, isr=new_isr, partition_epoch=ctrl.partition_epoch + 1
    )
    d.fired.extend((rule, "CTRL-ELECT-5"))
    return True


def _remove_from_isr(d: Draft, replica_id: str) -> None:
    """CTRL-FAIL-1: remove a dead broker from the ISR (leader none if it led), one write per
    broker. ZooKeeper (``ReplicaStateMachine.doRemoveReplicasFromIsr`` 1.1+,
    ``KafkaController.removeReplicaFromIsr`` 0.10) writes ``newLeaderAndIsr``: leader epoch
    + 1 even when the leader stays or nothing else changes. KRaft (MV 3.6-IV0+,
    ``PartitionChangeBuilder``) bumps the leader epoch only when the leader changes and
    writes nothing when nothing changes. CTRL-FAIL-2: the last member stays (1.1+,
    KAFKA-5642; KRaft without ELR); 0.10 keeps it only with unclean election disabled."""
    ctrl = d.controller
    if replica_id not in ctrl.isr:
        return
    new_isr = tuple([r for r in ctrl.isr if r != replica_id])
    if not new_isr and (d.profile.keeps_last_isr_member or not d.config.unclean_leader_election):
        new_isr = ctrl.isr
        d.fired.append("CTRL-FAIL-2")
    new_leader = None if ctrl.leader == replica_id else ctrl.leader
    bumps = d.profile.isr_removal_bumps_leader_epoch
    if new_isr == ctrl.isr and new_leader == ctrl.leader and not bumps:
        return
    epoch = ctrl.epoch + 1 if bumps or new_leader != ctrl.leader else ctrl.epoch
    if epoch != ctrl.epoch:
        remember_leader_isr(d)
    d.controller = evolve(ctrl, leader=new_leader, epoch=epoch, isr=new_isr, partition_epoch=ctrl.partition_epoch + 1)
    d.fired.append("CTRL-FAIL-1")


def _send_leader_and_isr(
    d: Draft, before: Controller, notify: tuple[str, ...] | None, online: list[str] | None = None
) -> None:
    """CTRL-ELECT-5: a new leader epoch goes to every live broker in a LeaderAndIsr; those in
    ``notify`` (default: all) apply it now, the others when it is delivered. A change that
    keeps the leader epoch (KRaft ISR change) reaches the brokers as metadata, which the
    model's leader reads from the controller's record directly."""
    ctrl = d.controller
    if ctrl.epoch == before.epoch:
        return
    replicas = d.config.replicas
    if online is None:
        online = [r.id for r in d.replicas if r.online]
    if notify is not None:
        for name in notify:
            if name not in replicas:
                raise StepRejected("CTRL-ELECT-5", f"elect.notify: unknown replica {name!r}")
    for name in online:
        message = LeaderAndIsr(dst=name, leader=ctrl.leader, epoch=ctrl.epoch, isr=ctrl.isr)
        if notify is None or name in notify:
            if d.leader_and_isr:
                _deliver_all_queued(d, name)
            apply_leader_and_isr(d, message)
        else:
            d.leader_and_isr = (*d.leader_and_isr, message)


def _deliver_all_queued(d: Draft, replica_id: str) -> None:
    """LAI-5: the controller's channel to a broker is first in, first out, so a broker that
    receives a LeaderAndIsr now first receives those still in flight to it, oldest first.
    (ZooKeeper: one queue and one ``RequestSendThread`` per broker in
    ``ControllerChannelManager``, which retries a request until it is sent; KRaft: brokers
    apply metadata records in log order.) Without this, a leader that missed its
    demotion and is re-elected would keep its view of the followers from before (LAI-2:
    kept on re-election) and could count a follower's records that a truncation under the
    other leader removed."""
    queued = [m for m in d.leader_and_isr if m.dst == replica_id]
    if not queued:
        return
    d.leader_and_isr = tuple([m for m in d.leader_and_isr if m.dst != replica_id])
    d.fired.append("LAI-5")
    for message in queued:
        apply_leader_and_isr(d, message)


def elect_refused(s: Readable, step: Elect) -> StepRejected | None:
    """CTRL-ELECT-PRE-1: an election without ``leader`` needs work (no live leader, or a
    broker failure not handled yet). CTRL-ELECT-4: a controlled election names a live ISR
    member."""
    ctrl = s.controller
    if step.leader is None:
        if ctrl.leader is not None and not unhandled_failures(s) and s.replicas[s.config.position[ctrl.leader]].online:
            return StepRejected(
                "CTRL-ELECT-PRE-1",
                f"elect: the leader {ctrl.leader} is alive and no broker failure is pending; "
                "name a leader for a controlled election",
            )
        return None
    if step.leader not in s.config.position:
        return StepRejected("CTRL-ELECT-4", f"elect: unknown replica {step.leader!r}")
    if not s.replicas[s.config.position[step.leader]].online:
        return StepRejected("CTRL-ELECT-4", f"elect: replica {step.leader} is offline")
    if step.leader not in ctrl.isr:
        return StepRejected(
            "CTRL-ELECT-4",
            f"elect: replica {step.leader} is not in the ISR {list(ctrl.isr)}; "
            "a controlled election picks an ISR member",
        )
    return None


def elect(d: Draft, step: Elect, prefer: str | None = None) -> None:
    """CTRL-ELECT-*: without ``leader``, the controller handles the brokers that failed
    (CTRL-FAIL-*) and elects for an offline partition; with ``leader``, a controlled
    election. Both bump the epoch and send LeaderAndIsr. ``prefer``: see ``_offline_election``."""
    if (refused := elect_refused(d, step)) is not None:
        raise refused
    ctrl = d.controller
    if step.leader is None:
        pending = unhandled_failures(d)
        if pending:
            handle_failures(d, step.notify, prefer)
            return
        # The partition is offline with every failure handled: try again (a broker came back).
        if not _offline_election(d, prefer):
            d.fired.append("CTRL-ELECT-3")
        _send_leader_and_isr(d, ctrl, step.notify)
        return
    online = [r.id for r in d.replicas if r.online]
    remember_leader_isr(d)
    # CTRL-ELECT-5: epoch + 1, and LeaderAndIsr to every live broker.
    d.controller = evolve(ctrl, leader=step.leader, epoch=ctrl.epoch + 1, partition_epoch=ctrl.partition_epoch + 1)
    d.fired.extend(("CTRL-ELECT-4", "CTRL-ELECT-5"))
    _send_leader_and_isr(d, ctrl, step.notify, online)


def heartbeat_lapse_refused(s: Readable, replica_id: str) -> StepRejected | None:
    """CTRL-FENCE-PRE-1: only under the KRaft controller, only a live follower."""
    if s.config.profile.isr_removal_bumps_leader_epoch:
        return StepRejected(
            "CTRL-FENCE-PRE-1",
            f"heartbeat_lapse: broker heartbeats and fencing are the KRaft controller's (diverging-epoch); this "
            f"partition runs {s.config.generation.value}, whose ZooKeeper controller bumps the leader epoch "
            "when it removes a follower",
        )
    if not s.replicas[s.config.position[replica_id]].online:
        return StepRejected("CTRL-FENCE-PRE-1", f"heartbeat_lapse: replica {replica_id} is offline")
    if s.controller.leader == replica_id:
        return StepRejected(
            "CTRL-FENCE-PRE-1",
            f"heartbeat_lapse: {replica_id} leads; fencing a live leader elects another while it still runs, "
            "which is not modelled (write crash, then elect)",
        )
    return None


def heartbeat_lapse(d: Draft, replica_id: str) -> None:
    """CTRL-FENCE-1 (KRaft): a live follower's broker is fenced (its heartbeats lapsed) and
    unfenced at its next heartbeat. Fenced, it leaves the ISR with one partition change
    that keeps the leader epoch (partition epoch + 1; the last member stays, CTRL-FAIL-2),
    and the leader, taking the new ISR as metadata, retries its HW without counting it
    (CTRL-FAIL-3; HW-LEADER-2: a fenced broker is not ISR-eligible). Unfenced, it is
    eligible again and its fetches bring it back through AlterPartition. Source:
    ``ReplicationControlManager.handleBrokerFenced`` / ``handleBrokerUnfenced`` →
    ``generateLeaderAndIsrUpdates`` → ``PartitionChangeBuilder`` (no leader-epoch bump for
    an ISR shrink, MV 3.6-IV0+, KAFKA-15021); ``Partition.isReplicaIsrEligible`` (KIP-841)."""
    if (refused := heartbeat_lapse_refused(d, replica_id)) is not None:
        raise refused
    ctrl = d.controller
    d.fired.append("CTRL-FENCE-1")
    new_isr = tuple([r for r in ctrl.isr if r != replica_id])
    if replica_id not in ctrl.isr:
        return  # only the broker's registration changes
    if not new_isr:  # CTRL-FAIL-2: KRaft writes no empty ISR (without ELR)
        d.fired.append("CTRL-FAIL-2")
        return
    fenced = tuple([r for r in d.config.replicas if r in ctrl.down or r == replica_id])
    d.controller = evolve(ctrl, down=fenced, isr=new_isr, partition_epoch=ctrl.partition_epoch + 1)
    if ctrl.leader is not None:
        # the leader applies the ISR change and retries its HW while the broker is fenced
        # (the HW's count skips fenced brokers)
        _leader_applies_isr_record(d, ctrl.leader)
    d.controller = evolve(d.controller, down=ctrl.down)  # unfenced at its next heartbeat


def deliver_alter_partition_refused(s: Readable, replica_id: str) -> StepRejected | None:
    """ISR-ALTER-PRE-1: an ISR proposal of leader ``replica_id`` is in flight."""
    if not any(p.leader == replica_id for p in s.alter_partitions):
        return StepRejected("ISR-ALTER-PRE-1", f"deliver_alter_partition: no ISR proposal of {replica_id} is in flight")
    return None


def deliver_alter_partition(d: Draft, replica_id: str) -> None:
    """ISR-ALTER-PRE-1: the proposal of leader ``replica_id`` reaches the controller, which
    answers it; the answer reaches the leader in the same step.

    ISR-ALTER-2: refused with ``FENCED_LEADER_EPOCH`` if the leader's epoch is older than
    the controller's, ``INVALID_UPDATE_VERSION`` if its partition epoch is, and
    ``INELIGIBLE_REPLICA`` (KIP-841) if it adds a broker the controller knows is down;
    otherwise committed: the ISR changes, the partition epoch goes up by one and the leader
    epoch does not (``KafkaController.processAlterPartition``,
    ``ReplicationControlManager.alterPartition``). ISR-ALTER-3: the leader then retries its
    HW (``Partition.handleAlterPartitionUpdate``, 3.1+, KAFKA-13091). ISR-ALTER-4: on a
    refusal the leader returns to the committed ISR, except after ``FENCED_LEADER_EPOCH``
    (a leader that has not seen its new epoch, ISR-ALTER-5): it keeps the proposal pending
    until its new LeaderAndIsr arrives (``Partition.handleAlterPartitionError``). A proposal
    the leader abandoned when it applied a newer record (ISR-ALTER-6) is always refused (that
    record raised the partition epoch, and the leader epoch never goes down), and the leader
    ignores the answer."""
    if (refused := deliver_alter_partition_refused(d, replica_id)) is not None:
        raise refused
    proposal = next(p for p in d.alter_partitions if p.leader == replica_id)
    d.alter_partitions = tuple([p for p in d.alter_partitions if p is not proposal])
    ctrl = d.controller
    error = None
    if proposal.leader_epoch < ctrl.epoch:
        error = "FENCED_LEADER_EPOCH"
    elif proposal.partition_epoch < ctrl.partition_epoch:
        error = "INVALID_UPDATE_VERSION"
    elif any(r in ctrl.down for r in proposal.isr if r not in ctrl.isr):
        error = "INELIGIBLE_REPLICA"
    if error is not None:
        d.fired.append("ISR-ALTER-4")
        if proposal.abandoned:
            d.fired.append("ISR-ALTER-6")  # the leader's state moved on: it ignores the answer
            return
        if error == "FENCED_LEADER_EPOCH":
            # ISR-ALTER-5: a fenced leader keeps its proposal pending until its new LeaderAndIsr arrives.
            d.fenced_proposals = (*d.fenced_proposals, proposal)
            d.fired.append("ISR-ALTER-5")
        return
    d.controller = evolve(ctrl, isr=proposal.isr, partition_epoch=ctrl.partition_epoch + 1)
    d.fired.extend(("ISR-ALTER-2", "ISR-ALTER-3"))
    maybe_increment_hw(d, replica_id)


def deliver_leader_and_isr_refused(s: Readable, replica_id: str) -> StepRejected | None:
    """LAI-PRE-1: a LeaderAndIsr is in flight to ``replica_id``."""
    if not any(m.dst == replica_id for m in s.leader_and_isr):
        return StepRejected("LAI-PRE-1", f"deliver_leader_and_isr: none is in flight to {replica_id}")
    return None


def deliver_leader_and_isr(d: Draft, replica_id: str) -> None:
    """LAI-PRE-1: the oldest LeaderAndIsr in flight to ``replica_id`` arrives."""
    if (refused := deliver_leader_and_isr_refused(d, replica_id)) is not None:
        raise refused
    message = next(m for m in d.leader_and_isr if m.dst == replica_id)
    d.leader_and_isr = tuple([m for m in d.leader_and_isr if m is not message])
    apply_leader_and_isr(d, message)


def apply_leader_and_isr(d: Draft, message: LeaderAndIsr) -> None:
    """LAI-1: a broker ignores a LeaderAndIsr whose epoch is not newer than it knows;
    otherwise it becomes leader (LAI-2) or follower (LAI-3)."""
    replica = d.replicas[d.position[message.dst]]
    if not replica.online:
        d.fired.append("MSG-DROP-1")
        return
    if message.epoch <= replica.leader_epoch:
        d.fired.append("LAI-1")
        return
    if message.leader is None and not d.profile.applies_leaderless_leader_and_isr:
        # LAI-4 (ZooKeeper): makeFollowers skips a leader that is not alive; nothing changes
        d.fired.append("LAI-4")
        return
    if replica.role is LEADER and message.leader != replica.id:
        # Stepping down: parked fetches are answered NOT_LEADER_OR_FOLLOWER and waiting
        # produces fail the same way (PRODUCE-6).
        abort_parked_fetches(d, replica.id, error="NOT_LEADER_OR_FOLLOWER")
        fail_pending_produces(d, replica.id, "NOT_LEADER_OR_FOLLOWER", "PRODUCE-6")
    elif replica.role is LEADER and d.profile.fences_request_epochs:
        # Re-elected at a new epoch: parked fetches carry the old epoch (FENCED, KIP-320's
        # DelayedFetch case E). HT fetches carry no epoch: they stay parked (0.10.2
        # DelayedFetch.tryComplete has cases A-D only).
        abort_parked_fetches(d, replica.id, error="FENCED_LEADER_EPOCH")
    if d.alter_partitions or d.fenced_proposals:
        drop_proposals(d, replica.id)
    if message.leader is None:
        become_leaderless(d, replica.id, message.epoch)
    elif message.leader == replica.id:
        become_leader(d, replica.id, message.epoch, message.isr)
    else:
        become_follower(d, replica.id, message.leader, message.epoch)
    if d.fetch_responses or d.epoch_responses:  # else there is nothing to drop
        drop_unreachable_answers(d, replica.id)
