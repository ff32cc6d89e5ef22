"""Property tests: the invariants over random runs of enabled steps.

Under ``leader-epoch`` and ``diverging-epoch`` every invariant holds after every step of
any run (drawn from the fuzzer's distribution, ``conformance/search/distribution.py``). Under
``hw-truncation`` hypothesis finds, on its own, a run that breaks one: the KIP-101 stories
are not special cases but what that generation allows.
"""

from __future__ import annotations

import itertools

import pytest
from hypothesis import Phase, given, settings
from hypothesis import strategies as st

from conformance.search.distribution import DataChooser, configs, draw_steps
from reference_impl import (
    Config,
    Generation,
    State,
    StepRejected,
    apply,
    check,
    enabled_steps,
    epoch_cache,
    hw,
    initial_state,
)
from reference_impl.steps import Crash


def random_run(data: st.DataObject, config: Config, max_steps: int) -> tuple[State, list[str]]:
    """Walk up to ``max_steps`` enabled steps drawn as ``kconform fuzz`` draws them (weighted
    kinds, drawn parameters, combined steps: ``conformance.search.distribution``), through
    hypothesis so a failure shrinks; return the violations seen."""
    chooser = DataChooser(data.draw)
    state = initial_state(config)
    violations = [str(v) for v in check(state)]
    for _ in range(data.draw(st.integers(0, max_steps), label="length")):
        batch = draw_steps(chooser, state)
        if not batch:
            break
        for step in batch:
            before = state
            try:
                state = apply(state, step)
            except StepRejected:  # a drawn parameter the reference does not allow here
                continue
            violations += [f"after {step}: {v}" for v in check(state, before)]
        if violations:
            break
    return state, violations


@pytest.mark.parametrize("generation", [Generation.LEADER_EPOCH, Generation.DIVERGING_EPOCH], ids=str)
@settings(max_examples=max(150, settings().max_examples))  # more with KCONFORM_HYPOTHESIS_PROFILE=thorough
@given(data=st.data())
def test_invariants_hold_under_epoch_generations(generation: Generation, data: st.DataObject) -> None:
    config = data.draw(configs(generation), label="config")
    _, violations = random_run(data, config, max_steps=40)
    assert violations == []


def test_hw_truncation_can_lose_or_diverge() -> None:
    """Hypothesis finds a run that violates StrongIsr or AckedNotLost under hw-truncation."""
    found: list[list[str]] = []

    # No shrinking: the first violating run is enough, and shrinking it costs a minute.
    @settings(max_examples=3000, derandomize=True, database=None, phases=[Phase.generate])
    @given(data=st.data())
    def search(data: st.DataObject) -> None:
        config = data.draw(configs(Generation.HW_TRUNCATION), label="config")
        _, violations = random_run(data, config, max_steps=40)
        if violations:
            found.append(violations)
            raise AssertionError(violations)

    with pytest.raises(AssertionError):
        search()
    assert any("StrongIsr" in v or "AckedNotLost" in v for v in found[-1])


def test_no_crash_step_is_enabled_for_an_offline_replica() -> None:
    state = apply(initial_state(Config()), Crash(replica="B"))
    assert Crash(replica="B") not in enabled_steps(state)


# --- the pure rules against naive versions ---------------------------------------------

caches = (
    st.lists(st.tuples(st.integers(0, 6), st.integers(0, 20)), max_size=5)
    .map(lambda pairs: tuple(sorted({e: o for e, o in pairs}.items())))
    .filter(lambda c: all(a[1] < b[1] for a, b in itertools.pairwise(c)))
)


def naive_end_offset_for(cache: tuple[tuple[int, int], ...], epoch: int, leo: int) -> tuple[int, int]:
    """EPOCH-CACHE-3 written as directly as the Kafka javadoc states it."""
    if not cache:
        return -1, -1
    if epoch == cache[-1][0]:
        return epoch, leo
    later = [e for e in cache if e[0] > epoch]
    if not later:
        return -1, -1
    earlier = [e for e in cache if e[0] <= epoch]
    return (earlier[-1][0] if earlier else epoch), later[0][1]


@given(cache=caches, epoch=st.integers(0, 7), extra=st.integers(0, 5))
def test_end_offset_for_matches_naive(cache: tuple[tuple[int, int], ...], epoch: int, extra: int) -> None:
    leo = (cache[-1][1] if cache else 0) + extra
    assert epoch_cache.end_offset_for(cache, epoch, leo) == naive_end_offset_for(cache, epoch, leo)


@given(cache=caches, epoch=st.integers(0, 8), start=st.integers(0, 25))
def test_assign_keeps_the_cache_monotonic(cache: tuple[tuple[int, int], ...], epoch: int, start: int) -> None:
    out = epoch_cache.assign(cache, epoch, start)
    assert all(a[0] < b[0] and a[1] < b[1] for a, b in itertools.pairwise(out))
    assert (epoch, start) in out or (out and out[-1][0] == epoch and out[-1][1] <= start)


def naive_leader_hw(current: int, leos: list[int | None]) -> int:
    """HW-LEADER-1 by its meaning: the highest offset every counted replica has reached,
    never lower than the current HW; an unknown LEO holds the HW."""
    if any(leo is None for leo in leos):
        return current
    reached = [h for h in range(max(leo for leo in leos if leo is not None) + 1) if all(leo >= h for leo in leos)]
    return max([current, *reached])


@given(
    current=st.integers(0, 10),
    leos=st.lists(st.one_of(st.none(), st.integers(0, 20)), min_size=1, max_size=4),
)
def test_leader_hw_matches_naive(current: int, leos: list[int | None]) -> None:
    assert hw.leader_hw(current, leos) == naive_leader_hw(current, leos)


@given(leader=st.integers(0, 20), leo=st.integers(0, 20))
def test_follower_hw_matches_naive(leader: int, leo: int) -> None:
    """HW-FOLLOWER-1 by its meaning: the highest offset the leader vouched for that the
    follower itself holds."""
    naive = max(h for h in range(leader + 1) if h <= leo)
    assert hw.follower_hw(leader, leo) == naive
