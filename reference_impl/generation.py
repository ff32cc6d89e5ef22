"""Protocol generations and their profiles: one frozen value per generation.

A ``Profile`` says, flag by flag, how a generation replicates a partition. Its flags are
the rows of the Generations table in ``spec/replication.md`` (a test reads the table and
compares); actions read flags, never generation names, so adding a generation is adding
a ``Generation`` member and a column of that table.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from enum import StrEnum


class Generation(StrEnum):
    """A family of Kafka releases that replicate a partition the same way."""

    HW_TRUNCATION = "hw-truncation"
    """Kafka 0.10 and earlier: a replica that becomes follower truncates to its own HW."""

    LEADER_EPOCH = "leader-epoch"
    """Kafka 0.11 to 2.6: OffsetsForLeaderEpoch before fetching (KIP-101, KIP-279, KIP-320)."""

    DIVERGING_EPOCH = "diverging-epoch"
    """Kafka 2.7 and later, as trunk has it (KRaft, 3.7+): the fetch carries the last fetched
    epoch (KIP-595 style); ISR changes go through AlterPartition; the min-ISR HW gate."""

    @property
    def profile(self) -> Profile:
        return PROFILES[self]


@dataclass(frozen=True)
class Profile:
    """How one generation behaves where generations differ (one flag per spec row)."""

    generation: Generation
    keeps_epoch_cache: bool
    """EPOCH-CACHE-*: replicas keep a leader-epoch cache (and LAI-2 assigns the new epoch)."""
    truncates_to_hw_on_follow: bool
    """LAI-3 / TRUNC-HW-1: a replica that follows a new leader cuts its log at its own HW."""
    asks_epoch_before_fetch: bool
    """LAI-3 / EPOCH-PRE-1: a new follower is ``truncating`` until OffsetsForLeaderEpoch answers."""
    fetch_carries_last_epoch: bool
    """FETCH-PRE-1 / FETCH-LEADER-2 / FOLLOWER-DIVERGE-1: the fetch carries the epoch of the
    follower's last record and the leader answers a divergence."""
    fences_request_epochs: bool
    """FETCH-LEADER-1: KIP-320 current-epoch fencing before the leadership check."""
    hw_counts_caught_up: bool
    """HW-LEADER-2: followers caught up within the lag count toward the HW, not only the ISR
    (KAFKA-4485, 0.10.2.0: so every generation; off only in the zoo's knockout)."""
    caught_up_from_previous_fetch: bool
    """ISR-CAUGHT-UP-2: a fetch reaching the LEO the leader had at the previous fetch makes
    the follower caught up as of that fetch (KAFKA-4485, 0.10.2.0: so every generation; off
    only in the zoo's knockout, which leaves ISR-CAUGHT-UP-1 alone, the 0.10.1 rule)."""
    reelection_forgets_out_of_sync_fetch: bool
    """LAI-2: a re-elected leader takes the previous fetch of a follower outside the ISR as
    never made (3.3+ ``Replica.resetReplicaState``); else as made at its LEO now (2.x
    ``resetLastCaughtUpTime``)."""
    shrink_spares_follower_at_leo: bool
    """ISR-SHRINK-2 (else -1): a lagging follower whose LEO equals the leader's stays."""
    isr_join_needs_epoch_start: bool
    """ISR-EXPAND-2 (KAFKA-7128): joining also needs the start of the leader's epoch."""
    halts_on_out_of_range: bool
    """FOLLOWER-OOR-2: with unclean election off, a leader LEO below the follower's halts it."""
    hw_retry_only_when_leo_moved: bool
    """HW-LEADER-1: a follower fetch retries the HW only when it moved the remote LEO."""
    keeps_last_isr_member: bool
    """CTRL-FAIL-2: the controller never empties the ISR (else only while unclean election is off)."""
    isr_removal_bumps_leader_epoch: bool
    """CTRL-FAIL-1: removing a dead follower from the ISR bumps the leader epoch (else only
    the partition epoch)."""
    applies_leaderless_leader_and_isr: bool
    """LAI-4 / RESTART-1: a broker told that the partition has no leader takes the new epoch
    and stops fetching (KRaft ``applyLocalFollowersDelta``); else it ignores the request and
    keeps its leader, epoch and fetcher, and one restarted into a leaderless partition knows
    no epoch (ZooKeeper ``ReplicaManager.makeFollowers`` skips a leader that is not alive)."""
    isr_change_via_alter_partition: bool
    """ISR-ALTER-*: the leader proposes ISR changes (AlterPartition) and counts the maximal
    ISR until the controller's answer commits them (else a direct, atomic write)."""
    hw_frozen_under_min_isr: bool
    """HW-LEADER-3: the leader's HW does not move while the ISR is below min.insync.replicas."""
    hw_skips_fenced_brokers: bool
    """HW-LEADER-2, HW-LEADER-4: a caught-up follower counts toward the HW only while
    ISR-eligible (``Partition.isReplicaIsrEligible``): not on a broker the controller knows is
    down (fenced, KIP-841, 3.3+), and its last fetch carried its current broker epoch (KIP-903,
    3.5+)."""
    follower_raises_log_start: bool
    """LOG-START-4 (KIP-107, 0.11+): after a fetch answer a follower raises its log start to
    the leader's, dropping the records below it."""


def _profile(generation: Generation, **flags: bool) -> Profile:
    return Profile(generation=generation, **flags)


PROFILES: dict[Generation, Profile] = {
    Generation.HW_TRUNCATION: _profile(
        Generation.HW_TRUNCATION,
        keeps_epoch_cache=False,
        truncates_to_hw_on_follow=True,
        asks_epoch_before_fetch=False,
        fetch_carries_last_epoch=False,
        fences_request_epochs=False,
        hw_counts_caught_up=True,
        caught_up_from_previous_fetch=True,
        reelection_forgets_out_of_sync_fetch=False,
        shrink_spares_follower_at_leo=False,
        isr_join_needs_epoch_start=False,
        halts_on_out_of_range=True,
        hw_retry_only_when_leo_moved=False,
        keeps_last_isr_member=False,
        isr_removal_bumps_leader_epoch=True,
        applies_leaderless_leader_and_isr=False,
        isr_change_via_alter_partition=False,
        hw_frozen_under_min_isr=False,
        hw_skips_fenced_brokers=False,
        follower_raises_log_start=False,
    ),
    Generation.LEADER_EPOCH: _profile(
        Generation.LEADER_EPOCH,
        keeps_epoch_cache=True,
        truncates_to_hw_on_follow=False,
        asks_epoch_before_fetch=True,
        fetch_carries_last_epoch=False,
        fences_request_epochs=True,
        hw_counts_caught_up=True,
        caught_up_from_previous_fetch=True,
        reelection_forgets_out_of_sync_fetch=False,
        shrink_spares_follower_at_leo=True,
        isr_join_needs_epoch_start=True,
        halts_on_out_of_range=False,
        hw_retry_only_when_leo_moved=False,
        keeps_last_isr_member=True,
        isr_removal_bumps_leader_epoch=True,
        applies_leaderless_leader_and_isr=False,
        isr_change_via_alter_partition=False,
        hw_frozen_under_min_isr=False,
        hw_skips_fenced_brokers=False,
        follower_raises_log_start=True,
    ),
    Generation.DIVERGING_EPOCH: _profile(
        Generation.DIVERGING_EPOCH,
        keeps_epoch_cache=True,
        truncates_to_hw_on_follow=False,
        asks_epoch_before_fetch=False,
        fetch_carries_last_epoch=True,
        fences_request_epochs=True,
        hw_counts_caught_up=True,
        caught_up_from_previous_fetch=True,
        reelection_forgets_out_of_sync_fetch=True,
        shrink_spares_follower_at_leo=True,
        isr_join_needs_epoch_start=True,
        halts_on_out_of_range=False,
        hw_retry_only_when_leo_moved=True,
        keeps_last_isr_member=True,
        isr_removal_bumps_leader_epoch=False,
        applies_leaderless_leader_and_isr=True,
        isr_change_via_alter_partition=True,
        hw_frozen_under_min_isr=True,
        hw_skips_fenced_brokers=True,
        follower_raises_log_start=True,
    ),
}


def breaks_invariants(profile: Profile) -> frozenset[str]:
    """The invariants (``invariants.py`` names) a generation is known to break, as a consequence
    of its flags (spec "Invariants"): a replica that truncates to its own HW on becoming
    follower (``truncates_to_hw_on_follow``, KIP-101) can drop acknowledged records and leave
    ISR members with other records, so StrongIsr and AckedNotLost can fail."""
    return frozenset({"StrongIsr", "AckedNotLost"}) if profile.truncates_to_hw_on_follow else frozenset()


FLAGS: tuple[str, ...] = tuple(f.name for f in fields(Profile) if f.name != "generation")
"""The flag names, in table order."""
