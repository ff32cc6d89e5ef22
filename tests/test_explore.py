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
from reference_impl import Config, Generation, State, Step, apply, check, enabled_steps, initial_state
from reference_impl.state import OUTPUTS, without_outputs
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


@pytest.mark.parametrize("generation", list(Generation))
def test_no_step_reads_an_output(generation: Generation) -> None:
    """``OUTPUTS`` (the last step's rules and deliveries, the last consumer read and
    ``epoch_query`` answer) are read by no step and no invariant but ConsumerBelowHw: a
    state and the same state without them enable the same steps, and each step takes the
    two to one state but for those fields, firing the same rules (what lets ``explore``
    merge them, ``merge_outputs``). Over every kind of step: faults, partial fetches,
    timer ticks, epoch queries and elections in flight."""
    from conformance.search.explore_alphabet import Richer

    config = Config(replicas=("A", "B", "C"), generation=generation, replica_high_watermark_checkpoint_interval_ms=0)
    rich = Richer(partial_fetches=True, timer_ticks=True, epoch_queries=True, in_flight=True)
    _, tree = explore(config, depth=4, max_records=2, faults=True, extra=rich, max_states=4000)
    with_outputs = [s for s in tree if without_outputs(s) is not s]
    queried = set() if generation is Generation.HW_TRUNCATION else {"epoch_query"}  # (no epochs to ask of)
    assert {name for s in with_outputs for name in OUTPUTS if getattr(s, name) != OUTPUTS[name]} == {
        "delivered",
        "consumed",
        *queried,
    }
    # and, two replicas deep enough to commit records, every state whose consumer read some
    two = Config(replicas=TWO, generation=generation, replica_high_watermark_checkpoint_interval_ms=0)
    _, deeper = explore(two, depth=5, max_records=2, faults=True, max_states=20000)
    read = [s for s in deeper if s.consumed is not None and s.consumed.records]
    assert len(read) > 30
    for state in [*with_outputs[::3], *read]:
        bare = without_outputs(state)
        steps = enabled_steps(state)
        assert enabled_steps(bare) == steps and rich(bare, steps) == rich(state, steps)
        broken = [v.invariant for v in check(state) if v.invariant != "ConsumerBelowHw"]
        assert [v.invariant for v in check(bare)] == broken
        for step in [*steps, *rich(state, steps)]:
            after, after_bare = apply(state, step), apply(bare, step)
            assert after.fired == after_bare.fired, step
            assert without_outputs(after) == without_outputs(after_bare), step


@pytest.mark.parametrize("generation", list(Generation))
def test_merging_outputs_reaches_every_state_up_to_its_outputs(generation: Generation) -> None:
    config = Config(replicas=TWO, generation=generation, replica_high_watermark_checkpoint_interval_ms=0)
    full, tree = explore(config, depth=5, max_records=2)
    merged, merged_tree = explore(config, depth=5, max_records=2, merge_outputs=True)
    assert full.complete and merged.complete and merged.outputs_merged and not full.outputs_merged
    assert set(merged_tree) == {without_outputs(s) for s in tree}
    assert merged.states == len(merged_tree) < full.states * 3 // 4
    assert [(f.invariant, len(f.path)) for f in merged.findings] == [(f.invariant, len(f.path)) for f in full.findings]


def test_a_merged_search_checks_every_consumer_read(monkeypatch: pytest.MonkeyPatch) -> None:
    """ConsumerBelowHw reads an output, so a merged search checks it on every ``consume``,
    where the state the read leaves may be known already: a reference whose reads claim an
    HW of 0 breaks it, found at the depth the full search finds it, in parallel too."""
    import conformance.search.explore as explore_module
    import conformance.search.explore_parallel as parallel_module
    from conformance.search.explore_parallel import available, search

    real = explore_module.transition

    def reads_past_the_hw(state: State, step: Step, firings: dict[tuple[str, ...], int]) -> State:
        after = real(state, step, firings)
        consumed = after.consumed
        if consumed is not None and consumed is not state.consumed and consumed.records:
            after.__dict__["consumed"] = evolve(consumed, hw=0)
        return after

    monkeypatch.setattr(explore_module, "transition", reads_past_the_hw)
    monkeypatch.setattr(parallel_module, "transition", reads_past_the_hw)
    config = Config(replicas=TWO, generation=Generation.LEADER_EPOCH, replica_high_watermark_checkpoint_interval_ms=0)
    full, _ = explore(config, depth=5, max_records=1)
    merged, _ = explore(config, depth=5, max_records=1, merge_outputs=True)
    [finding] = full.findings
    assert finding.invariant == "ConsumerBelowHw"
    assert [(f.invariant, len(f.path), f.detail) for f in merged.findings] == [
        (finding.invariant, len(finding.path), finding.detail)
    ]
    first, _ = explore(config, depth=5, max_records=1, merge_outputs=True, stop_on_finding=True)
    assert [f.path for f in first.findings] == [merged.findings[0].path] and not first.complete
    assert first.states < merged.states
    if available():
        parallel, _ = search(config, depth=5, max_records=1, workers=2, tree=False, merge_outputs=True)
        assert [(f.invariant, f.path) for f in parallel.findings] == [(f.invariant, f.path) for f in merged.findings]
        assert parallel.levels == merged.levels
