"""Election and LeaderAndIsr members (historical-bugs.md entries 19-23)."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable

from reference_impl import controller
from reference_impl.draft import Draft
from reference_impl.messages import LeaderAndIsr
from reference_impl.steps import Elect
from reference_impl.values import evolve

from .base import ALL, APPLY, Mutant, Patch, member


def _offline_election(d: Draft, step: Elect) -> bool:
    """An election the controller runs because the leader is gone (CTRL-ELECT-1..3)."""
    leader = d.controller.leader
    return step.leader is None and (leader is None or not d.replica(leader).online)


@member(
    "unclean-election-when-disabled",
    19,
    "unclean.leader.election.enable ignored (OfflinePartitionLeaderElectionStrategy)",
    ALL,
    ("CTRL-ELECT-2", "CTRL-ELECT-3"),
)
class UncleanElectionWhenDisabled(Mutant):
    """When no ISR member is live, the first live replica leads whatever
    unclean.leader.election.enable says."""

    def patches(self) -> Iterable[Patch]:
        original = controller.elect

        def elect(d: Draft, step: Elect) -> None:
            config = d.config
            d.config = dataclasses.replace(config, unclean_leader_election=True)
            try:
                original(d, step)
            finally:
                d.config = config

        return [(APPLY.ACTIONS, Elect, elect)]


@member(
    "election-ignores-isr", 20, "plausible misreading of seeds 003/004 (a follower takes over)", ALL, ("CTRL-ELECT-1",)
)
class ElectionIgnoresIsr(Mutant):
    """A clean election picks the first live replica in replica order, in the ISR or not."""

    def patches(self) -> Iterable[Patch]:
        original = controller.elect

        def elect(d: Draft, step: Elect) -> None:
            online = [r for r in d.config.replicas if d.replica(r).online]
            ctrl = d.controller
            if _offline_election(d, step) and online and online[0] not in ctrl.isr:
                isr = tuple(r for r in d.config.replicas if r in ctrl.isr or r == online[0])
                d.controller = evolve(ctrl, isr=isr)
            original(d, step)

        return [(APPLY.ACTIONS, Elect, elect)]


@member(
    "election-keeps-dead-isr-members",
    21,
    "plausible: offline election without newIsr = liveIsr",
    ALL,
    ("CTRL-ELECT-1",),
)
class ElectionKeepsDeadIsrMembers(Mutant):
    """After a clean election the new ISR is the old one, the dead former leader included."""

    def patches(self) -> Iterable[Patch]:
        original = controller.elect

        def elect(d: Draft, step: Elect) -> None:
            kept = d.controller.isr
            clean = _offline_election(d, step) and any(d.replica(r).online for r in kept)
            original(d, step)
            if clean and d.controller.leader is not None:
                d.controller = evolve(d.controller, isr=kept)

        return [(APPLY.ACTIONS, Elect, elect)]


@member(
    "controlled-election-of-out-of-sync-replica",
    22,
    "plausible: PreferredReplicaPartitionLeaderElectionStrategy without the ISR check",
    ALL,
    ("CTRL-ELECT-4",),
)
class ControlledElectionOfOutOfSyncReplica(Mutant):
    """``elect leader=X`` accepts any live replica (it joins the ISR), not only ISR members."""

    def patches(self) -> Iterable[Patch]:
        original = controller.elect

        def elect(d: Draft, step: Elect) -> None:
            ctrl = d.controller
            named = step.leader
            if named is not None and named in d.position and d.replica(named).online and named not in ctrl.isr:
                d.controller = evolve(ctrl, isr=tuple(r for r in d.config.replicas if r in ctrl.isr or r == named))
            original(d, step)

        return [(APPLY.ACTIONS, Elect, elect)]


@member(
    "stale-leader-and-isr-applied",
    23,
    "plausible: ReplicaManager.becomeLeaderOrFollower without its leader-epoch check",
    ALL,
    ("LAI-1",),
)
class StaleLeaderAndIsrApplied(Mutant):
    """A broker applies every LeaderAndIsr that reaches it, also one older than the
    epoch it already knows."""

    def patches(self) -> Iterable[Patch]:
        original = controller.apply_leader_and_isr

        def apply_leader_and_isr(d: Draft, message: LeaderAndIsr) -> None:
            replica = d.replica(message.dst)
            if replica.online and message.epoch <= replica.leader_epoch:
                d.put(evolve(replica, leader_epoch=message.epoch - 1))
            original(d, message)

        return [(controller, "apply_leader_and_isr", apply_leader_and_isr)]
