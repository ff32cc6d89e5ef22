"""Election and LeaderAndIsr members (historical-bugs.md entries 19-22, 61)."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable

from reference_impl import controller
from reference_impl.draft import Draft
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
    "leader-and-isr-out-of-order",
    61,
    "plausible (the reference's own error until the 1M-trace corpus found it): a broker told at once "
    "applies the new LeaderAndIsr ahead of older ones in flight (ControllerChannelManager is first in, first out)",
    ALL,
    ("LAI-5",),
)
class LeaderAndIsrOutOfOrder(Mutant):
    """A broker that is told of an election at once applies it before the LeaderAndIsr
    requests still in flight to it; those arrive later and are ignored as stale (LAI-1).
    A leader that missed its demotion is then "re-elected" and keeps its followers' LEOs."""

    def patches(self) -> Iterable[Patch]:
        def deliver_all_queued(d: Draft, replica_id: str) -> None:
            return None

        return [(controller, "_deliver_all_queued", deliver_all_queued)]
