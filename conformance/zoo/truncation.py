"""Truncation members (historical-bugs.md entries 31-36)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from reference_impl import State, controller, follower, replica_ops, roles
from reference_impl.draft import Draft
from reference_impl.epoch_cache import EpochCache
from reference_impl.state import Role
from reference_impl.truncation import Truncation, offset_truncation
from reference_impl.values import evolve

from .base import EPOCHS, HT, LE, Mutant, Patch, member, on_draft


@member(
    "hw-truncation-on-restart-under-epochs",
    31,
    "KAFKA-1211 / KIP-101 (0.11.0) not applied on restart",
    EPOCHS,
    ("TRUNC-HW-1", "RESTART-1"),
)
class HwTruncationOnRestartUnderEpochs(Mutant):
    """Pre-KIP-101 truncation kept under leader epochs: a restarted replica cuts its log
    at its own HW (KIP-101 scenario 1)."""

    def after(self, before: State, after: State, step: dict[str, Any]) -> State:
        if step["kind"] != "restart":
            return after
        replica = after.replica(step["replica"])
        return on_draft(after, lambda d: replica_ops.truncate(d, replica.id, replica.hw, rule="TRUNC-HW-1"))


@member(
    "hw-truncation-on-become-follower-under-epochs",
    32,
    "KAFKA-1211 / KIP-101 (0.11.0) not applied on LeaderAndIsr (0.10 ReplicaManager.makeFollowers)",
    EPOCHS,
    ("TRUNC-HW-1", "LAI-3"),
    profile={"truncates_to_hw_on_follow": True},
)
class HwTruncationOnBecomeFollowerUnderEpochs(Mutant):
    """A replica that follows a new leader truncates to its own HW first, under the
    epoch generations too."""


@member(
    "no-hw-truncation-on-become-follower",
    33,
    "seed 001 §3.1 / 004 misreading (erratum E6)",
    HT,
    ("TRUNC-HW-1",),
    profile={"truncates_to_hw_on_follow": False},
)
class NoHwTruncationOnBecomeFollower(Mutant):
    """hw-truncation: becoming follower keeps the whole log (no truncation to the HW)."""


@member(
    "ht-truncate-on-every-leader-and-isr",
    34,
    "0.10.1 Partition.makeFollower skips truncation when the leader did not change",
    HT,
    ("TRUNC-HW-1", "LAI-3"),
)
class HtTruncateOnEveryLeaderAndIsr(Mutant):
    """hw-truncation: a follower truncates to its HW on every LeaderAndIsr, also when its
    leader did not change (a re-election of the same leader)."""

    def patches(self) -> Iterable[Patch]:
        original = roles.become_follower

        def become_follower(d: Draft, replica_id: str, leader_id: str, epoch: int) -> None:
            before = d.replica(replica_id)
            original(d, replica_id, leader_id, epoch)
            if d.profile.truncates_to_hw_on_follow:
                replica_ops.truncate(d, replica_id, before.hw, rule="TRUNC-HW-1")

        return [(controller, "become_follower", become_follower)]


@member("no-truncation-when-leader-unchanged", 35, "KAFKA-7164", LE, ("LAI-3",))
class NoTruncationWhenLeaderUnchanged(Mutant):
    """leader-epoch: a LeaderAndIsr naming the same leader leaves the follower fetching
    (no OffsetsForLeaderEpoch round for the new epoch)."""

    def patches(self) -> Iterable[Patch]:
        original = roles.become_follower

        def become_follower(d: Draft, replica_id: str, leader_id: str, epoch: int) -> None:
            before = d.replica(replica_id)
            original(d, replica_id, leader_id, epoch)
            if before.role is Role.FOLLOWER and before.leader == leader_id:
                d.put(evolve(d.replica(replica_id), fetch_state=before.fetch_state))

        return [(controller, "become_follower", become_follower)]


@member("pre-kip-279-truncation", 36, "KAFKA-6361 / KIP-279 (2.0)", EPOCHS, ("TRUNC-EPOCH-2", "TRUNC-EPOCH-3"))
class PreKip279Truncation(Mutant):
    """One-round truncation: the follower cuts at min(answer offset, LEO) and is done,
    without comparing the answer's epoch with its own."""

    def patches(self) -> Iterable[Patch]:
        def single_round(
            answer_epoch: int, answer_offset: int, follower_cache: EpochCache, follower_leo: int, follower_hw: int
        ) -> Truncation:
            plan = offset_truncation(answer_epoch, answer_offset, follower_cache, follower_leo, follower_hw)
            if plan.rule == "TRUNC-EPOCH-1":
                return plan
            return Truncation(min(answer_offset, follower_leo), True, "TRUNC-EPOCH-2")

        return [(follower, "offset_truncation", single_round)]
