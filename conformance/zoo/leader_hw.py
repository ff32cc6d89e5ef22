"""Leader high-watermark members (historical-bugs.md entries 1-6)."""

from __future__ import annotations

from collections.abc import Iterable

from reference_impl import controller, hw, hw_advance, isr, roles
from reference_impl.draft import Draft
from reference_impl.state import Replica

from .base import ALL, DE, EPOCHS, Mutant, Patch, member


def _nothing(*args: object, **kwargs: object) -> None:
    return None


@member(
    "hw-without-max",
    1,
    "seed 000 §2 misreading (erratum E2); Partition.maybeIncrementLeaderHW",
    ALL,
    ("HW-LEADER-1",),
)
class HwWithoutMax(Mutant):
    """The leader's HW is min(LEO of every counted replica), without the max with the
    current HW, so it can go backwards (when a counted follower fetches below it)."""

    def patches(self) -> Iterable[Patch]:
        def leader_hw(current_hw: int, counted_leos: Iterable[int | None]) -> int:
            leos = list(counted_leos)
            known = [leo for leo in leos if leo is not None]
            return current_hw if len(known) < len(leos) else min(known)

        return [(hw, "leader_hw", leader_hw)]


@member("hw-counts-every-replica", 2, "seed 004 misreading (erratum E10)", ALL, ("HW-LEADER-2",))
class HwCountsEveryReplica(Mutant):
    """Every replica's LEO bounds the leader's HW, in the ISR or not: one dead follower
    freezes the HW for ever."""

    def patches(self) -> Iterable[Patch]:
        def counted_leos(d: Draft, leader: Replica) -> list[int | None]:
            return [leader.leo, *(p.remote_leo for p in leader.progress)]

        return [(hw_advance, "counted_leos", counted_leos)]


@member(
    "hw-ignores-caught-up-followers",
    3,
    "Kafka 0.10 HW rule kept under 0.11+ (Partition.maybeIncrementLeaderHW, lastCaughtUpTimeMs)",
    EPOCHS,
    ("HW-LEADER-2",),
    profile={"hw_counts_caught_up": False},
)
class HwIgnoresCaughtUpFollowers(Mutant):
    """Only the ISR counts for the HW: a follower outside the ISR but caught up within
    replica.lag.time.max.ms is outrun by the HW."""


@member(
    "hw-not-advanced-on-isr-shrink",
    4,
    "KAFKA-13091",
    ALL,
    ("HW-LEADER-1", "ISR-SHRINK-1", "ISR-SHRINK-2", "ISR-ALTER-3"),
)
class HwNotAdvancedOnIsrShrink(Mutant):
    """The HW is not retried when the ISR shrinks: acks=all produces the smaller ISR
    already satisfies stay pending. Under diverging-epoch the shrink commits when the
    AlterPartition answer arrives, and that retry (ISR-ALTER-3) is the one KAFKA-13091
    added, so it is skipped too."""

    def patches(self) -> Iterable[Patch]:
        return [(isr, "maybe_increment_hw", _nothing), (controller, "maybe_increment_hw", _nothing)]


@member(
    "hw-not-advanced-on-become-leader",
    5,
    "plausible: Partition.makeLeader without maybeIncrementLeaderHW",
    ALL,
    ("LAI-2", "HW-LEADER-1"),
)
class HwNotAdvancedOnBecomeLeader(Mutant):
    """A new leader keeps its follower HW until the next append or fetch, even when its
    ISR is itself alone."""

    def patches(self) -> Iterable[Patch]:
        return [(roles, "maybe_increment_hw", _nothing)]


@member(
    "de-leader-hw-on-every-fetch",
    6,
    "0.10/0.11 behaviour on 2.7+ (Partition.updateFollowerFetchState)",
    DE,
    ("HW-LEADER-1",),
    profile={"hw_retry_only_when_leo_moved": False},
)
class DeLeaderHwOnEveryFetch(Mutant):
    """The diverging-epoch leader retries its HW on every follower fetch, not only when
    the fetch moved that follower's LEO."""
