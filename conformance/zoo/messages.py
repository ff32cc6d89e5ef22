"""Message and failure members (historical-bugs.md entries 57, 58, 60)."""

from __future__ import annotations

from collections.abc import Iterable

from reference_impl import controller, fetch_purgatory, follower
from reference_impl.draft import Draft

from .base import ALL, HT, Mutant, Patch, member


@member("stale-epoch-answer-applied", 57, "KAFKA-18991", ALL, ("MSG-DROP-1",))
class StaleEpochAnswerApplied(Mutant):
    """Answers to a fetcher session of an older epoch or leader are still delivered and
    applied (only a crash of the receiver loses them)."""

    def patches(self) -> Iterable[Patch]:
        def reachable(d: Draft, dst: str, incarnation: int, src: str, request_epoch: int) -> bool:
            return d.replica(dst).online

        return [
            (follower, "reachable", reachable),
            (controller, "drop_unreachable_answers", lambda d, replica_id: None),
        ]


@member(
    "ht-truncate-instead-of-halt",
    58,
    "0.10 ReplicaFetcherThread.handleOffsetOutOfRange (erratum E6)",
    HT,
    ("FOLLOWER-OOR-2",),
    profile={"halts_on_out_of_range": False},
)
class HtTruncateInsteadOfHalt(Mutant):
    """hw-truncation with unclean election disabled: a follower whose LEO is above the
    leader's truncates to it instead of halting the broker."""


@member(
    "stepping-down-leader-keeps-parked-fetches",
    60,
    "plausible: DelayedFetch.tryComplete case A missing",
    ALL,
    ("FETCH-PARK-4",),
)
class SteppingDownLeaderKeepsParkedFetches(Mutant):
    """A leader that steps down keeps its parked fetches; they complete later from a
    broker that no longer leads."""

    def patches(self) -> Iterable[Patch]:
        original = fetch_purgatory.abort_parked_fetches

        def abort(d: Draft, leader_id: str, *, error: str | None) -> None:
            if error != "NOT_LEADER_OR_FOLLOWER":
                original(d, leader_id, error=error)

        return [(controller, "abort_parked_fetches", abort)]
