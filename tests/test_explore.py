"""Bounded exhaustive exploration: it visits exactly the reachable states (checked against a
naive search), finds KIP-101's StrongIsr violation under hw-truncation by a shortest path,
none under the epoch generations, and a zoo member's disagreement as a replayable fixture."""

from __future__ import annotations

from pathlib import Path

import pytest

from conformance.adapters.in_process import ReferenceAdapter
from conformance.fixtures.loading import load_fixture_file
from conformance.judging.runner import run_fixtures
from conformance.search.explore import explore, leaf_paths, replay, witness_fixture
from conformance.zoo import ZOO
from reference_impl import Config, Generation, State, Step, apply, enabled_steps, initial_state
from reference_impl.values import evolve

TWO = ("A", "B")


def naive_reachable(config: Config, depth: int, max_records: int) -> list[object]:
    """Every state reachable in ``depth`` steps, by brute force: a list and ``==``, no hashing."""
    level = [initial_state(config)]
    seen = [evolve(level[0], fired=())]
    for _ in range(depth):
        nxt = []
        for state in level:
            for step in enabled_steps(state):
                if step.kind == "produce" and len(state.produces) >= max_records:
                    continue
                if step.kind == "epoch_query":  # explore leaves out what only asks (its alphabet)
                    continue
                after = evolve(apply(state, step), fired=())
                if after not in seen:
                    seen.append(after)
                    nxt.append(after)
        level = nxt
    return seen


@pytest.mark.parametrize("generation", list(Generation))
def test_explore_visits_exactly_the_reachable_states(generation: Generation) -> None:
    config = Config(replicas=TWO, generation=generation)
    result, tree = explore(config, depth=3, max_records=1)
    naive = naive_reachable(config, 3, 1)
    assert result.complete and result.states == len(naive) == len(tree)
    assert set(tree) == set(naive)
    assert result.transitions >= result.states - 1 and result.depth_reached == 3


def test_explore_finds_kip_101_by_a_shortest_path_under_hw_truncation(tmp_path: Path) -> None:
    config = Config(replicas=TWO, generation=Generation.HW_TRUNCATION, replica_high_watermark_checkpoint_interval_ms=0)
    result, _ = explore(config, depth=6, max_records=1, stop_on_finding=True)
    [finding] = result.findings
    assert finding.invariant == "StrongIsr" and finding.expected and len(finding.path) == 6
    # no shorter path exists: the whole of depth 5 was searched first without a finding
    shallower, _ = explore(config, depth=5, max_records=1)
    assert shallower.complete and not shallower.findings
    witness = tmp_path / "w.yaml"
    witness.write_text(witness_fixture(config, finding.path, "w", "t"), encoding="utf-8")
    _, [passed] = run_fixtures(ReferenceAdapter(), "reference", load_fixture_file(witness))
    assert passed.outcome == "passed"


@pytest.mark.parametrize("generation", [Generation.LEADER_EPOCH, Generation.DIVERGING_EPOCH])
def test_no_invariant_breaks_under_the_epoch_generations(generation: Generation) -> None:
    result, _ = explore(Config(replicas=TWO, generation=generation), depth=5, max_records=1)
    assert result.complete and not result.findings


def test_replay_finds_a_zoo_members_disagreement_as_a_fixture_that_kills_it(tmp_path: Path) -> None:
    config = Config(replicas=TWO, generation=Generation.LEADER_EPOCH)
    result, tree = explore(config, depth=4, max_records=1)
    assert len(list(leaf_paths(tree))) > 0
    assert replay(ReferenceAdapter(), config, tree, result) is None  # the reference agrees with itself
    mutant = ZOO["hw-truncation-on-restart-under-epochs"]()  # HW truncation kept under leader epochs
    found = replay(mutant, config, tree, result)
    # produce, crash A, restart A (the controller handles the bounce first, RESTART-2): A follows B
    # and the mutant truncates it to its HW, 0, losing the record. (Crash and restart alone no longer
    # tell: the reference's restart drops the entry of the epoch A led without writing too, RESTART-3.)
    assert found is not None and found.field == "replicas.A.leo" and len(found.path) == 3
    witness = tmp_path / "w.yaml"
    witness.write_text(witness_fixture(config, found.path, "w", "t"), encoding="utf-8")
    [fixture] = load_fixture_file(witness)
    _, [killed] = run_fixtures(ZOO["hw-truncation-on-restart-under-epochs"](), "mutant", [fixture])
    _, [passed] = run_fixtures(ReferenceAdapter(), "reference", [fixture])
    assert (killed.outcome, passed.outcome) == ("failed", "passed")


def test_replay_through_the_engine_stops_below_a_disagreement() -> None:
    """Judged by the one engine (a ``known`` list turns rewinding off), the shortest
    disagreement is found as by rewinding, and once one is known the longer paths are only
    replayed up to a step before it, each prefix once: far fewer paths than leaves."""
    config = Config(replicas=TWO, generation=Generation.LEADER_EPOCH)
    result, tree = explore(config, depth=4, max_records=1)
    leaves = len(list(leaf_paths(tree)))
    found = replay(ZOO["hw-truncation-on-restart-under-epochs"](), config, tree, result, known={"no.such.field": "-"})
    rewinding, _ = explore(config, depth=4, max_records=1)
    by_rewinding = replay(ZOO["hw-truncation-on-restart-under-epochs"](), config, tree, rewinding)
    assert found is not None and by_rewinding is not None and rewinding.rewound
    assert (found.field, len(found.path)) == (by_rewinding.field, len(by_rewinding.path))
    assert not result.rewound and 0 < result.paths_replayed < leaves // 4


def test_the_collector_is_paused_for_the_whole_search_and_resumed_after() -> None:
    """The merge 2dcaabb had left it paused around each transition only: it then ran between
    transitions, rescanning the growing tree (a quarter of the search's CPU)."""
    import gc

    seen: list[bool] = []

    def watch(state: State, steps: list[Step]) -> list[Step]:
        seen.append(gc.isenabled())  # asked at every state the search expands
        return []

    was = gc.isenabled()
    gc.enable()
    try:
        explore(Config(replicas=TWO, generation=Generation.LEADER_EPOCH), depth=3, max_records=1, extra=watch)
        assert seen and not any(seen)
        assert gc.isenabled()
    finally:
        if not was:
            gc.disable()


def test_enabled_steps_leaves_out_only_the_classes_asked() -> None:
    """``explore`` asks no precondition of the steps it drops (``leave_out``): the rest of
    the list is ``enabled_steps``'s own, in its order."""
    from reference_impl.steps import EpochQuery, Produce

    for generation in Generation:
        _, tree = explore(Config(replicas=("A", "B", "C"), generation=generation), depth=3, max_records=1)
        for state in tree:
            for out in (frozenset({EpochQuery}), frozenset({EpochQuery, Produce})):
                assert enabled_steps(state, out) == [s for s in enabled_steps(state) if type(s) not in out]


def test_a_refusal_reads_as_it_did_though_formatted_only_when_read() -> None:
    import pickle

    from reference_impl import StepRejected

    refusal = StepRejected("FETCH-PRE-1", "fetch: replica B is offline")
    assert str(refusal) == "[FETCH-PRE-1] fetch: replica B is offline"
    assert refusal.args == ("[FETCH-PRE-1] fetch: replica B is offline",)
    assert repr(refusal) == "StepRejected('[FETCH-PRE-1] fetch: replica B is offline')"
    again = pickle.loads(pickle.dumps(refusal))
    assert (again.rule, again.reason, str(again)) == (refusal.rule, refusal.reason, str(refusal))
    with pytest.raises(StepRejected, match=r"^\[FETCH-PRE-1\] fetch: replica B is offline$"):
        raise refusal


def test_the_search_keeps_one_object_per_equal_part() -> None:
    """``explore.Shared``: replicas (and the controller's record) that two paths built alike
    are one object in the tree, so a state reached again compares by identity and the tree
    holds each part once; the search itself is unchanged (the tests above)."""
    config = Config(replicas=("A", "B"), generation=Generation.LEADER_EPOCH)
    _, parents = explore(config, 5, max_records=2)
    replicas = [r for state in parents for r in state.replicas]
    controllers = [state.controller for state in parents]
    assert len(parents) > 1000
    assert len({id(r) for r in replicas}) == len(set(replicas)) < len(replicas) // 4
    assert len({id(c) for c in controllers}) == len(set(controllers))
