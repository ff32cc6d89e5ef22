"""explore's reductions and richer alphabet (conformance/search/explore_reduce.py, explore_alphabet.py).

The reductions are exact: the reduced search reaches every class of states the full one
does (checked against the full search), because the canonical form is a congruence (a
reordered state behaves alike under every step) and a ``pointless`` step changes nothing.
The richer steps are enabled wherever they are offered (explore asserts it) and appear.
Follower symmetry is not exact; its paths are still real paths."""

from __future__ import annotations

from dataclasses import replace

import pytest

from conformance.search.explore import explore, path_to, state_key
from conformance.search.explore_alphabet import EVERYTHING, Richer, timers
from conformance.search.explore_reduce import canonical, independent, pointless
from reference_impl import Config, Generation, State, apply, check, enabled_steps, initial_state
from reference_impl.steps import Crash, Elect, EpochQuery, Fetch, Tick
from reference_impl.values import evolve

THREE = ("A", "B", "C")


def _config(generation: Generation, replicas: tuple[str, ...] = THREE) -> Config:
    return Config(replicas=replicas, generation=generation, replica_high_watermark_checkpoint_interval_ms=0)


@pytest.mark.parametrize("generation", list(Generation))
def test_the_reduced_search_reaches_every_class_the_full_one_does(generation: Generation) -> None:
    config = _config(generation)
    full, full_tree = explore(config, depth=3, max_records=1, reduce=False)
    reduced, tree = explore(config, depth=3, max_records=1, reduce=True)
    assert full.complete and reduced.complete
    assert {canonical(s) for s in tree} == {canonical(s) for s in full_tree}
    assert reduced.states <= full.states and reduced.transitions < full.transitions and reduced.slept > 0
    assert reduced.levels == [sum(1 for s in tree if len(path_to(tree, s)) == d) for d in range(1, 4)]


def _reordered(state: State) -> State:
    """The same queues with the destinations' interleaving reversed (each one's order kept)."""

    def flip(queue: tuple[object, ...], field: str) -> tuple[object, ...]:
        order = list(dict.fromkeys(getattr(m, field) for m in queue))[::-1]
        return tuple(m for d in order for m in queue if getattr(m, field) == d)

    return evolve(
        state,
        fetch_responses=flip(state.fetch_responses, "dst"),
        epoch_responses=flip(state.epoch_responses, "dst"),
        leader_and_isr=flip(state.leader_and_isr, "dst"),
        parked_fetches=flip(state.parked_fetches, "follower"),
        alter_partitions=flip(state.alter_partitions, "leader"),
    )


@pytest.mark.parametrize("generation", list(Generation))
def test_a_state_with_its_queues_reordered_behaves_alike_under_every_step(generation: Generation) -> None:
    _, tree = explore(_config(generation), depth=4, max_records=1, faults=True, max_states=6000)
    interleaved = [s for s in tree if _reordered(s) != s]
    assert interleaved, "the search reaches states with answers in flight to two brokers"
    for state in interleaved[:150]:
        other = _reordered(state)
        assert canonical(other) == canonical(state)
        steps = enabled_steps(state)
        assert enabled_steps(other) == steps
        assert [v.invariant for v in check(other)] == [v.invariant for v in check(state)]
        for step in steps:
            assert canonical(apply(other, step)) == canonical(apply(state, step)), step


@pytest.mark.parametrize("generation", [Generation.HW_TRUNCATION, Generation.DIVERGING_EPOCH])
def test_a_pointless_step_changes_nothing(generation: Generation) -> None:
    _, tree = explore(_config(generation, ("A", "B")), depth=5, max_records=1, reduce=False)
    skipped = 0
    for state in tree:
        for step in enabled_steps(state):
            if pointless(state, step):
                skipped += 1
                assert state_key(apply(state, step)) == state
    assert skipped > len(tree) // 2


def test_the_richer_steps_are_offered_and_enabled() -> None:
    config = _config(Generation.LEADER_EPOCH, ("A", "B"))
    result, tree = explore(config, depth=4, max_records=2, extra=EVERYTHING, reduce=True)  # a refused step would raise
    plain, _ = explore(config, depth=4, max_records=2)
    steps = [step for _, step in tree.values() if step is not None]
    assert any(isinstance(s, Fetch) and s.max_records == 1 for s in steps)
    assert any(isinstance(s, Tick) and s.ms not in (500, 15000) for s in steps)
    assert any(isinstance(s, EpochQuery) for s in steps)
    assert any(isinstance(s, Elect) and s.notify == () for s in steps)
    assert result.states > plain.states


def test_timer_ticks_land_around_each_timer() -> None:
    config = Config(
        replicas=("A", "B"), replica_lag_time_max_ms=1000, replica_high_watermark_checkpoint_interval_ms=400
    )
    state = initial_state(config)
    assert timers(state) == [400, 500, 1000]  # checkpoint run, ISR check (lag / 2), B's lag from its catch-up at 0
    ticks = Richer(timer_ticks=True)(state, [])
    assert {t.ms for t in ticks if isinstance(t, Tick)} == {399, 400, 401, 499, 500, 501, 999, 1000, 1001}


def test_symmetry_merges_more_and_keeps_real_paths() -> None:
    config = _config(Generation.DIVERGING_EPOCH)
    reduced, _ = explore(config, depth=3, max_records=1)
    sym, tree = explore(config, depth=3, max_records=1, symmetry=True)
    assert sym.states < reduced.states
    for state in list(tree)[::7]:
        replayed = initial_state(config)
        for step in path_to(tree, state):
            replayed = apply(replayed, step)
        assert state_key(replayed) == state


def test_depth_completed_is_one_less_when_the_budget_cuts_a_level() -> None:
    config = _config(Generation.LEADER_EPOCH, ("A", "B"))
    cut, _ = explore(config, depth=6, max_records=1, max_states=500)
    assert not cut.complete and cut.depth_completed == cut.depth_reached - 1


@pytest.mark.parametrize("generation", list(Generation))
def test_steps_called_independent_commute_wherever_both_are_enabled(generation: Generation) -> None:
    config = Config(replicas=THREE, generation=generation, replica_lag_time_max_ms=1000)
    _, tree = explore(config, depth=4, max_records=1, faults=True, extra=Richer(timer_ticks=True), max_states=3000)
    pairs = 0
    for state in tree:
        steps = [*enabled_steps(state), *Richer(timer_ticks=True)(state, [])]
        steps += [replace(s, unflushed_from=0) for s in steps if isinstance(s, Crash) and state.replica(s.replica).leo]
        for i, a in enumerate(steps):
            for b in steps[i + 1 :]:
                if not independent(a, b):
                    continue
                pairs += 1
                ab, ba = apply(apply(state, a), b), apply(apply(state, b), a)  # each stays enabled
                assert canonical(state_key(ab)) == canonical(state_key(ba)), (a, b)
                assert not ab.delivered and not ba.delivered
    assert pairs > 1000


def test_two_replicas_skip_only_the_steps_that_change_nothing() -> None:
    """With two replicas the default search tries no ``pointless`` step (a self-loop) and
    keeps every state whole: the same tree as trying every step, fewer transitions."""
    config = _config(Generation.DIVERGING_EPOCH, ("A", "B"))
    full, full_tree = explore(config, depth=4, max_records=2, reduce=False)
    default, tree = explore(config, depth=4, max_records=2)
    assert tree == full_tree and default.levels == full.levels and default.slept == 0
    assert default.transitions < full.transitions and set(default.rules) == set(full.rules)
