"""The leader-epoch cache: ``(epoch, start offset)`` pairs, one per leader epoch.

Each replica keeps the epochs of the records in its log, with the offset of the first
record of each epoch (``leader-epoch-checkpoint``). It is what answers
OffsetsForLeaderEpoch and what a diverging-epoch check compares. Mirrors Kafka's
``LeaderEpochFileCache`` (``assign``, ``truncateFromEnd``, ``truncateFromStart``,
``endOffsetFor``).
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right

EpochCache = tuple[tuple[int, int], ...]

UNDEFINED_EPOCH = -1
UNDEFINED_OFFSET = -1


def latest_epoch(cache: EpochCache) -> int | None:
    return cache[-1][0] if cache else None


def assign(cache: EpochCache, epoch: int, start_offset: int) -> EpochCache:
    """EPOCH-CACHE-1: record that ``epoch`` starts at ``start_offset``.

    No change when the latest entry already has this epoch at an offset at or below
    ``start_offset``. Otherwise entries at the end whose epoch is >= ``epoch`` or whose
    start offset is >= ``start_offset`` are removed first, so epochs and start offsets
    stay strictly increasing (``LeaderEpochFileCache.assign`` and
    ``maybeTruncateNonMonotonicEntries``).
    """
    if cache:
        last_epoch, last_start = cache[-1]
        if last_epoch == epoch and start_offset >= last_start:
            return cache
        if last_epoch < epoch and last_start < start_offset:
            return (*cache, (epoch, start_offset))  # the common case: a new epoch after the others
    # The entries removed are at the end: counted from there, then one copy of the rest (a
    # cache grows by one entry per election; copying it into a list to pop from cost more).
    kept = len(cache)
    while kept and (cache[kept - 1][0] >= epoch or cache[kept - 1][1] >= start_offset):
        kept -= 1
    return (*cache[:kept], (epoch, start_offset))


def start_of(cache: EpochCache, epoch: int) -> int | None:
    """The start offset ``cache`` records for ``epoch``, or None: a binary search, not a
    walk of a cache that grows by one entry per election (epochs strictly increase along
    every cache ``assign`` makes, the mutants' included: each removes the entries whose
    epoch is at or above the one it adds)."""
    i = bisect_left(cache, epoch, key=_epoch)
    return cache[i][1] if i < len(cache) and cache[i][0] == epoch else None


def truncate_from_end(cache: EpochCache, end_offset: int) -> EpochCache:
    """EPOCH-CACHE-2: drop entries whose start offset is at or above the new LEO.

    Start offsets strictly increase along a cache (EPOCH-CACHE-1), so the entries kept are
    a prefix, found by a binary search: a cache grows by one entry per election, and a
    long run must not pay for all of them at every truncation. The cache itself when
    nothing is dropped."""
    kept = bisect_left(cache, end_offset, key=_start)
    return cache if kept == len(cache) else cache[:kept]


def truncate_from_start(cache: EpochCache, start_offset: int) -> EpochCache:
    """EPOCH-CACHE-4: drop entries starting at or below the new log start, except the
    last of them, which moves to the log start (the epoch of the first record kept).

    ``LeaderEpochFileCache.truncateFromStart``: used when the log start rises (LOG-START-4).
    The cache itself when no entry starts below ``start_offset``."""
    below = bisect_right(cache, start_offset, key=_start)  # entries starting at or below
    if below == 0:
        return cache
    moved = ((cache[below - 1][0], start_offset), *cache[below:])
    return cache if moved == cache else moved


def end_offset_for(cache: EpochCache, requested_epoch: int | None, log_end_offset: int) -> tuple[int, int]:
    """EPOCH-CACHE-3: the ``(epoch, end offset)`` answer for ``requested_epoch``.

    - an undefined request, or an epoch above every known one: ``(-1, -1)``;
    - the latest epoch: ``(epoch, LEO)``;
    - otherwise (KIP-279): the largest known epoch <= the requested one, with the start
      offset of the first epoch above it; if no epoch is <= the requested one, the
      requested epoch with the first known start offset above it.
    """
    if requested_epoch is None or requested_epoch == UNDEFINED_EPOCH or not cache:
        return UNDEFINED_EPOCH, UNDEFINED_OFFSET
    if cache[-1][0] == requested_epoch:
        return requested_epoch, log_end_offset
    # epochs strictly increase along a cache (assign keeps them so): the first entry above the
    # requested epoch is found by a binary search, and the floor is the one before it
    above = bisect_right(cache, requested_epoch, key=_epoch)
    if above == len(cache):
        return UNDEFINED_EPOCH, UNDEFINED_OFFSET
    higher = cache[above]
    if above == 0:
        return requested_epoch, higher[1]
    return cache[above - 1][0], higher[1]


def _epoch(entry: tuple[int, int]) -> int:
    return entry[0]


def _start(entry: tuple[int, int]) -> int:
    return entry[1]


def render(cache: EpochCache) -> list[list[int]]:
    return [[epoch, start] for epoch, start in cache]
