"""Where a follower truncates to, given the leader's epoch answer (KIP-101 / KIP-279).

Shared by the OffsetsForLeaderEpoch response (``leader-epoch``) and the diverging epoch
in a fetch response (``diverging-epoch``): both hand the follower an
``(epoch, end offset)`` pair. Mirrors ``AbstractFetcherThread.getOffsetTruncationState``.
"""

from __future__ import annotations

from dataclasses import dataclass

from . import epoch_cache
from .epoch_cache import UNDEFINED_EPOCH, UNDEFINED_OFFSET, EpochCache
from .values import fast_init


@fast_init
@dataclass(frozen=True)
class Truncation:
    offset: int
    completed: bool
    rule: str


def offset_truncation(
    answer_epoch: int,
    answer_offset: int,
    follower_cache: EpochCache,
    follower_leo: int,
    follower_hw: int,
) -> Truncation:
    """TRUNC-EPOCH-1..4: the offset to truncate to, and whether truncation is done."""
    if answer_offset == UNDEFINED_OFFSET:
        # The leader knows no such epoch: fall back to the HW (TRUNC-EPOCH-1).
        return Truncation(min(follower_hw, follower_leo), True, "TRUNC-EPOCH-1")
    found_epoch, found_offset = epoch_cache.end_offset_for(follower_cache, answer_epoch, follower_leo)
    if found_epoch == UNDEFINED_EPOCH:
        # The follower tracks no epoch <= the answer's: trust the leader's offset.
        return Truncation(min(answer_offset, follower_leo), True, "TRUNC-EPOCH-4")
    if found_epoch != answer_epoch:
        # KIP-279: the follower does not know the leader's epoch; truncate to the end of
        # its own largest epoch below it and ask again.
        return Truncation(min(found_offset, follower_leo), False, "TRUNC-EPOCH-3")
    return Truncation(min(found_offset, answer_offset, follower_leo), True, "TRUNC-EPOCH-2")
