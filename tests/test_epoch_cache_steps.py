"""The epoch cache's per-step shortcuts against the plain definitions they replace.

A cache grows by one entry per election, so a long run must not walk it whole at every
step (issue 22): ``epoch_cache.assign`` counts the entries it drops instead of popping a
copy, ``epoch_cache.start_of`` bisects, EpochCacheMonotonic (``invariants``) and
SAFE-EPOCH-CACHE (``judging.safety``) walk a changed cache only from the entries it
shares with the one checked before. Each must answer what the plain version answers,
on caches of every shape (``assign`` also on caches no rule makes: a mutant's).
"""

from __future__ import annotations

import itertools

from hypothesis import given, settings
from hypothesis import strategies as st

from conformance.judging.safety import _replica_findings
from reference_impl import epoch_cache
from reference_impl.invariants import _still_increasing

Cache = tuple[tuple[int, int], ...]

pairs = st.lists(st.tuples(st.integers(0, 9), st.integers(0, 30)), max_size=8).map(tuple)


def _increasing(cache: Cache) -> bool:
    return all(e1 < e2 and o1 < o2 for (e1, o1), (e2, o2) in itertools.pairwise(cache))


increasing = pairs.map(lambda c: tuple(sorted(set(c)))).filter(_increasing)


def plain_assign(cache: Cache, epoch: int, start_offset: int) -> Cache:
    """``assign`` as it was written before: pop from a copy."""
    if cache and cache[-1][0] == epoch and start_offset >= cache[-1][1]:
        return cache
    kept = list(cache)
    while kept and (kept[-1][0] >= epoch or kept[-1][1] >= start_offset):
        kept.pop()
    kept.append((epoch, start_offset))
    return tuple(kept)


@given(cache=pairs, epoch=st.integers(0, 10), start=st.integers(0, 31))
def test_assign_is_the_plain_assign_on_any_cache(cache: Cache, epoch: int, start: int) -> None:
    assert epoch_cache.assign(cache, epoch, start) == plain_assign(cache, epoch, start)


@given(cache=increasing, epoch=st.integers(0, 10))
def test_start_of_is_the_scan(cache: Cache, epoch: int) -> None:
    assert epoch_cache.start_of(cache, epoch) == next((s for e, s in cache if e == epoch), None)


@settings(max_examples=300)
@given(old=increasing, cut=st.integers(0, 8), tail=st.one_of(increasing, pairs), whole=st.booleans())
def test_still_increasing_is_the_full_walk(old: Cache, cut: int, tail: Cache, whole: bool) -> None:
    """``cache`` either ``old`` cut and extended (what a step does) or unrelated to it."""
    cache = tail if whole else old[: max(0, len(old) - cut)] + tail
    assert _still_increasing(cache, old) == _increasing(cache)


@settings(max_examples=300)
@given(
    runs=st.lists(st.tuples(st.integers(0, 8), st.one_of(increasing, pairs), st.booleans()), min_size=1, max_size=6),
    first=increasing,
)
def test_safe_epoch_cache_with_memory_is_the_plain_check(runs: list[tuple[int, Cache, bool]], first: Cache) -> None:
    """A replica observed step after step, its cache list sharing the entries it kept (as
    the reference's ``Observer`` does) or rendered afresh: the findings with the memory
    of the cache checked before are those without it."""
    memory: dict[str, tuple[object, bool]] = {}
    seen: list[list[int]] = [list(entry) for entry in first]
    for cut, tail, fresh in [(0, (), False), *runs]:
        kept = seen[: max(0, len(seen) - cut)]
        seen = [list(e) for e in kept] if fresh else kept
        seen += [list(entry) for entry in tail]
        rep = {"hw": 0, "leo": 40, "epoch_cache": seen}
        assert _replica_findings("A", rep, memory) == _replica_findings("A", rep)
