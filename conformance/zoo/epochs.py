"""Leader-epoch and fencing members (historical-bugs.md entries 38-47)."""

from __future__ import annotations

from collections.abc import Iterable

from reference_impl import epoch_cache, epoch_leader, follower, isr, leader_fetch, network, roles
from reference_impl.draft import Draft
from reference_impl.epoch_cache import UNDEFINED_EPOCH, UNDEFINED_OFFSET, EpochCache
from reference_impl.hw_advance import maybe_increment_hw
from reference_impl.messages import FetchResponse
from reference_impl.state import Replica

from .base import DE, EPOCHS, LE, Mutant, Patch, member, module_with


@member(
    "no-kip-320-fencing",
    38,
    "KAFKA-7395 / KIP-320 (2.1)",
    EPOCHS,
    ("FETCH-LEADER-1", "EPOCH-LEADER-1"),
)
class NoKip320Fencing(Mutant):
    """Fetch and OffsetsForLeaderEpoch check only that the receiver leads, not the
    request's current leader epoch (as hw-truncation does)."""

    def patches(self) -> Iterable[Patch]:
        original = leader_fetch.fencing_error

        def unfenced(receiver: Replica, request_epoch: int, fences_epochs: bool) -> str | None:
            return original(receiver, request_epoch, False)

        return [(leader_fetch, "fencing_error", unfenced), (epoch_leader, "fencing_error", unfenced)]


@member(
    "isr-join-without-epoch-start-check",
    39,
    "KAFKA-7128 (2.1)",
    EPOCHS,
    ("ISR-EXPAND-2",),
    profile={"isr_join_needs_epoch_start": False},
)
class IsrJoinWithoutEpochStartCheck(Mutant):
    """A follower joins the ISR as soon as its LEO reaches the (possibly lagging) HW,
    below the start of the leader's epoch."""


@member("leader-updates-progress-on-diverging-fetch", 40, "KAFKA-13141", DE, ("FETCH-LEADER-2", "FETCH-LEADER-5"))
class LeaderUpdatesProgressOnDivergingFetch(Mutant):
    """A fetch answered with a diverging epoch still records the follower's progress
    (remote LEO, caught-up time), its ISR expansion and the HW."""

    def patches(self) -> Iterable[Patch]:
        original = network.respond

        def respond(d: Draft, response: FetchResponse) -> None:
            if response.diverging_epoch is not None:
                leader = d.replica(response.src)
                leader_fetch._update_follower_progress(d, leader, response.dst, response.fetch_offset)
                isr.maybe_expand_isr(d, response.src, response.dst)
                maybe_increment_hw(d, response.src)
            original(d, response)

        return [(leader_fetch, "respond", respond)]


def _handle_fetch_without_check(skip: str) -> object:
    """``handle_fetch`` that skips FETCH-LEADER-2 ``always`` or unless the leader's epoch
    for the follower's last one is lower (``unless-epoch-lower``)."""
    original = leader_fetch.handle_fetch

    def handle_fetch(
        d: Draft,
        leader_id: str,
        follower_id: str,
        fetch_offset: int,
        request_epoch: int,
        last_fetched_epoch: int | None,
        incarnation: int,
        max_records: int | None = None,
        max_wait_ms: int | None = None,
    ) -> None:
        if last_fetched_epoch is not None:
            leader = d.replica(leader_id)
            epoch, _ = epoch_cache.end_offset_for(leader.epoch_cache, last_fetched_epoch, leader.leo)
            if skip == "always" or epoch >= last_fetched_epoch:
                last_fetched_epoch = None
        original(
            d,
            leader_id,
            follower_id,
            fetch_offset,
            request_epoch,
            last_fetched_epoch,
            incarnation,
            max_records,
            max_wait_ms,
        )

    return handle_fetch


@member(
    "diverging-check-compares-epochs-only",
    41,
    "plausible half of FETCH-LEADER-2 (Partition.readRecords)",
    DE,
    ("FETCH-LEADER-2",),
)
class DivergingCheckComparesEpochsOnly(Mutant):
    """A divergence is answered only when the leader's epoch for the follower's last
    one is lower; ``end offset < fetch offset`` is not checked."""

    def patches(self) -> Iterable[Patch]:
        return [(follower, "handle_fetch", _handle_fetch_without_check("unless-epoch-lower"))]


@member(
    "leader-ignores-last-fetched-epoch",
    42,
    "plausible: KIP-595-style truncation on the follower side only",
    DE,
    ("FETCH-LEADER-2",),
)
class LeaderIgnoresLastFetchedEpoch(Mutant):
    """The leader serves every fetch from its offset: no divergence check at all."""

    def patches(self) -> Iterable[Patch]:
        return [(follower, "handle_fetch", _handle_fetch_without_check("always"))]


@member(
    "follower-ignores-diverging-epoch",
    43,
    "plausible: AbstractFetcherThread.truncateOnFetchResponse missing",
    DE,
    ("FOLLOWER-DIVERGE-1",),
)
class FollowerIgnoresDivergingEpoch(Mutant):
    """A diverging-epoch answer changes nothing on the follower (it is dropped)."""

    def patches(self) -> Iterable[Patch]:
        original = follower.deliver_fetch

        def deliver_fetch(d: Draft, replica_id: str) -> None:
            response = next((r for r in d.fetch_responses if r.dst == replica_id), None)
            if response is not None and response.diverging_epoch is not None:
                d.fetch_responses = tuple(r for r in d.fetch_responses if r is not response)
                return
            original(d, replica_id)

        return [(follower, "deliver_fetch", deliver_fetch)]


@member(
    "no-epoch-entry-on-become-leader",
    44,
    "KAFKA-7415 (2.1): Partition.makeLeader persists the epoch",
    EPOCHS,
    ("LAI-2", "EPOCH-CACHE-1"),
)
class NoEpochEntryOnBecomeLeader(Mutant):
    """Becoming leader does not add (epoch, LEO) to the leader's epoch cache; only an
    append does."""

    def patches(self) -> Iterable[Patch]:
        return [(roles, "epoch_cache", module_with(epoch_cache, assign=lambda cache, epoch, start: cache))]


@member(
    "epoch-cache-keeps-conflicting-entries",
    45,
    "KAFKA-7415 (2.1): LeaderEpochFileCache.assign",
    EPOCHS,
    ("EPOCH-CACHE-1",),
)
class EpochCacheKeepsConflictingEntries(Mutant):
    """Assigning an epoch keeps earlier entries whose start offset is at or above the
    new one: two epochs start at the same offset."""

    def patches(self) -> Iterable[Patch]:
        def assign(cache: EpochCache, epoch: int, start_offset: int) -> EpochCache:
            if cache and cache[-1][0] == epoch and start_offset >= cache[-1][1]:
                return cache
            kept = list(cache)
            while kept and kept[-1][0] >= epoch:
                kept.pop()
            return (*kept, (epoch, start_offset))

        return [(epoch_cache, "assign", assign)]


@member(
    "epoch-lookup-below-first-epoch-undefined",
    46,
    "KAFKA-7415 (2.1): LeaderEpochFileCache.endOffsetFor",
    EPOCHS,
    ("EPOCH-CACHE-3",),
)
class EpochLookupBelowFirstEpochUndefined(Mutant):
    """An epoch below every cached one is answered undefined (-1, -1) instead of
    (requested epoch, first start offset)."""

    def patches(self) -> Iterable[Patch]:
        original = epoch_cache.end_offset_for

        def end_offset_for(cache: EpochCache, requested_epoch: int | None, log_end_offset: int) -> tuple[int, int]:
            if requested_epoch is not None and cache and 0 <= requested_epoch < cache[0][0]:
                return UNDEFINED_EPOCH, UNDEFINED_OFFSET
            return original(cache, requested_epoch, log_end_offset)

        return [(epoch_cache, "end_offset_for", end_offset_for)]


@member(
    "epoch-answer-start-of-epoch-plus-one",
    47,
    "seed 001 §4.2 misreading (erratum E8)",
    LE,
    ("EPOCH-CACHE-3", "EPOCH-LEADER-2"),
)
class EpochAnswerStartOfEpochPlusOne(Mutant):
    """The OffsetsForLeaderEpoch answer is the requested epoch with the start of epoch+1
    (or the LEO), not the largest known epoch <= it with the next epoch's start."""

    def patches(self) -> Iterable[Patch]:
        original = epoch_cache.end_offset_for

        def end_offset_for(cache: EpochCache, requested_epoch: int | None, log_end_offset: int) -> tuple[int, int]:
            epoch, end = original(cache, requested_epoch, log_end_offset)
            if requested_epoch is None or epoch == UNDEFINED_EPOCH:
                return epoch, end
            following = next((start for e, start in cache if e == requested_epoch + 1), log_end_offset)
            return requested_epoch, following

        return [(epoch_leader, "epoch_cache", module_with(epoch_cache, end_offset_for=end_offset_for))]
