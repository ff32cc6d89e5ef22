"""The controller: elects leaders, bumps the epoch, tells brokers (LeaderAndIsr).

Mirrors the ZooKeeper controller's ``OfflinePartitionLeaderElectionStrategy`` (clean
and unclean) and the preferred-replica election, with each broker learning the
decision through a LeaderAndIsr message that may stay in flight.
"""

from __future__ import annotations

from .draft import Draft
from .errors import StepRejected
from .fetch_purgatory import abort_parked_fetches
from .messages import LeaderAndIsr
from .network import drop_unreachable_answers
from .purgatory import fail_pending_produces
from .roles import become_follower, become_leader
from .state import Controller, Role
from .steps import Elect
from .values import evolve


def elect(d: Draft, step: Elect) -> None:
    """CTRL-ELECT-1..5: choose a leader, bump the epoch, send LeaderAndIsr."""
    ctrl = d.controller
    replicas = d.config.replicas
    online = [r for r in replicas if d.replica(r).online]
    if step.leader is not None:
        # CTRL-ELECT-4: controlled election of a named live ISR member.
        if step.leader not in replicas:
            raise StepRejected("CTRL-ELECT-4", f"elect: unknown replica {step.leader!r}")
        if step.leader not in online:
            raise StepRejected("CTRL-ELECT-4", f"elect: replica {step.leader} is offline")
        if step.leader not in ctrl.isr:
            raise StepRejected(
                "CTRL-ELECT-4",
                f"elect: replica {step.leader} is not in the ISR {list(ctrl.isr)}; "
                "a controlled election picks an ISR member",
            )
        new_leader, new_isr, rule = step.leader, ctrl.isr, "CTRL-ELECT-4"
    else:
        if ctrl.leader is not None and d.replica(ctrl.leader).online:
            raise StepRejected(
                "CTRL-ELECT-PRE-1",
                f"elect: the leader {ctrl.leader} is alive; name a leader for a controlled election",
            )
        live_isr = [r for r in ctrl.isr if r in online]
        if live_isr:
            # CTRL-ELECT-1: first live ISR member in replica order; ISR = live ISR.
            ordered = [r for r in replicas if r in live_isr]
            new_leader, new_isr, rule = ordered[0], tuple(ordered), "CTRL-ELECT-1"
        elif d.config.unclean_leader_election and online:
            # CTRL-ELECT-2: unclean: first live replica; the ISR is the leader alone.
            new_leader, new_isr, rule = online[0], (online[0],), "CTRL-ELECT-2"
            d.unclean_elections += 1
        else:
            # CTRL-ELECT-3: nobody may lead: the partition is offline, epoch unchanged.
            d.controller = evolve(ctrl, leader=None)
            d.fire("CTRL-ELECT-3")
            return

    # CTRL-ELECT-5: epoch + 1, and LeaderAndIsr to every live broker.
    epoch = ctrl.epoch + 1
    d.controller = Controller(leader=new_leader, epoch=epoch, isr=new_isr)
    d.fire(rule, "CTRL-ELECT-5")
    notify = online if step.notify is None else list(step.notify)
    for name in notify:
        if name not in replicas:
            raise StepRejected("CTRL-ELECT-5", f"elect.notify: unknown replica {name!r}")
    for name in online:
        message = LeaderAndIsr(dst=name, leader=new_leader, epoch=epoch, isr=new_isr)
        if name in notify:
            apply_leader_and_isr(d, message)
        else:
            d.leader_and_isr = (*d.leader_and_isr, message)


def deliver_leader_and_isr(d: Draft, replica_id: str) -> None:
    """LAI-PRE-1: the oldest LeaderAndIsr in flight to ``replica_id`` arrives."""
    message = next((m for m in d.leader_and_isr if m.dst == replica_id), None)
    if message is None:
        raise StepRejected("LAI-PRE-1", f"deliver_leader_and_isr: none is in flight to {replica_id}")
    d.leader_and_isr = tuple(m for m in d.leader_and_isr if m is not message)
    apply_leader_and_isr(d, message)


def apply_leader_and_isr(d: Draft, message: LeaderAndIsr) -> None:
    """LAI-1: a broker ignores a LeaderAndIsr whose epoch is not newer than it knows;
    otherwise it becomes leader (LAI-2) or follower (LAI-3)."""
    replica = d.replica(message.dst)
    if not replica.online:
        d.fire("MSG-DROP-1")
        return
    if message.epoch <= replica.leader_epoch:
        d.fire("LAI-1")
        return
    if replica.role is Role.LEADER and message.leader != replica.id:
        # Stepping down: parked fetches are answered NOT_LEADER_OR_FOLLOWER and waiting
        # produces fail the same way (PRODUCE-6).
        abort_parked_fetches(d, replica.id, error="NOT_LEADER_OR_FOLLOWER")
        fail_pending_produces(d, replica.id, "NOT_LEADER_OR_FOLLOWER", "PRODUCE-6")
    elif replica.role is Role.LEADER:
        # Re-elected at a new epoch: parked fetches carry the old epoch (FENCED).
        abort_parked_fetches(d, replica.id, error="FENCED_LEADER_EPOCH")
    if message.leader == replica.id:
        become_leader(d, replica.id, message.epoch)
    else:
        become_follower(d, replica.id, message.leader, message.epoch)
    drop_unreachable_answers(d, replica.id)
