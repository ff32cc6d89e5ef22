"""Judging implementations that are not the reference: the realistic shapes get the verdict
a Kafka engineer would give; coarsening, conventions and levels do what they say."""

from __future__ import annotations

import gc
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from conformance.adapters.base import Description, StepResult
from conformance.adapters.in_process import ReferenceAdapter
from conformance.fixtures.loading import load_fixtures
from conformance.fixtures.paths import FIXTURES_DIR
from conformance.implementations.registry import resolve
from conformance.judging.coarsen import plan
from conformance.judging.collector import NO_FULL
from conformance.judging.conventions import adjust_expected, normalise
from conformance.judging.levels import highest_level
from conformance.judging.runner import FixtureResult, run_fixtures

FIXTURES, _ = load_fixtures([FIXTURES_DIR])
ROUND_KINDS = frozenset({"produce", "fetch_round", "epoch_round", "tick", "crash", "restart", "elect"})


def _run(name: str, level: str) -> list[FixtureResult]:
    _, results = run_fixtures(resolve(name), name, FIXTURES, level=level)
    return results


@pytest.mark.parametrize("level", ["exact", "settled", "safety"])
def test_the_reference_passes_every_level(level: str) -> None:
    _, results = run_fixtures(ReferenceAdapter(), "reference", FIXTURES, level=level)
    assert Counter(r.outcome for r in results) == Counter({"passed": len(FIXTURES)})
    assert highest_level([r.levels for r in results]) == ("safety" if level == "safety" else "exact")


@pytest.mark.parametrize("name", ["shape-round-only", "shape-epochs-from-1", "shape-early-answer"])
def test_correct_but_different_shapes_reach_settled_and_safety(name: str) -> None:
    results = _run(name, "settled")
    assert [(r.fixture, r.reason) for r in results if r.outcome != "passed"] == []
    assert highest_level([r.levels for r in results]) in ("exact", "settled")
    assert all(r.levels["safety"] == "passed" for r in results)


def test_round_only_skips_no_fixture_and_says_how_much_it_checked() -> None:
    results = _run("shape-round-only", "settled")
    assert not [r for r in results if r.outcome == "skipped"]
    checked, total = sum(r.checked for r in results), sum(r.expectations for r in results)
    assert 0 < checked < total and checked > total * 3 // 4
    seed01 = next(r for r in results if r.fixture == "seed-01-normal-round/leader-epoch")
    assert "step 1: fetch -> fetch_round" in seed01.notes  # parked: the round stays open ...
    assert "step 3: deliver_fetch done by the implementation itself (round-only)" in seed01.notes  # ... until then
    assert "step 9: consume left out" in seed01.notes


def test_epochs_from_one_is_exact_once_normalised() -> None:
    assert highest_level([r.levels for r in _run("shape-epochs-from-1", "exact")]) == "exact"


def test_early_answers_differ_step_by_step_but_settle() -> None:
    results = _run("shape-early-answer", "exact")
    purgatory = next(r for r in results if r.fixture == "seed-02-purgatory/leader-epoch")
    assert purgatory.levels == {"exact": "failed", "settled": "passed", "safety": "passed"}


def test_a_leader_hw_that_goes_back_fails_safety_naming_the_invariant() -> None:
    results = _run("shape-hw-decrease", "safety")
    failed = [r for r in results if r.outcome == "failed"]
    assert failed and all(r.levels["safety"] == "failed" for r in failed)
    properties = {f["property"] for r in failed for f in r.failures}
    assert "SAFE-LEADER-HW-MONOTONIC" in properties
    hw_back = next(r for r in failed for f in r.failures if f["property"] == "SAFE-LEADER-HW-MONOTONIC")
    assert "SAFE-" in hw_back.reason and hw_back.divergence is not None
    assert highest_level([r.levels for r in results]) == "none"


def test_a_fixture_runs_up_to_a_step_that_cannot_be_lowered() -> None:
    fixture = next(f for f in FIXTURES if f.id == "seed-05a-data-loss-leader-epoch")
    lowered = plan(fixture, ROUND_KINDS - {"crash"})
    assert lowered.stopped.startswith("step 7 (crash) is not supported")
    assert 0 < lowered.checked < lowered.expectations
    assert all(i < 6 for s in lowered.steps for i in s.covers)


def test_lowering_keeps_only_what_the_reference_itself_does_when_lowered() -> None:
    for fixture in FIXTURES:
        lowered = plan(fixture, ROUND_KINDS | {"deliver_leader_and_isr"})
        for step in lowered.steps:
            for check in step.checks:
                if check.expect and step.observation is not None:
                    from conformance.judging.compare import first_divergence

                    assert first_divergence(check.expect, step.observation) is None


def _desc(**caps: object) -> Description:
    return Description("x", "1", ("leader-epoch",), ("produce",), ("replicas", "leader_epoch"), ("hw",), **caps)  # type: ignore[arg-type]


def test_conventions_are_undone_before_comparison() -> None:
    observed = {
        "leader_epoch": 1,
        "replicas": {
            "A": {"role": "leader", "leader_epoch": 1, "log": ["m@1"], "epoch_cache": [[1, 0]], "remote_leo": {}},
            "B": {"role": "follower", "online": False, "leader_epoch": 1},
        },
        "consumer": {"records": ["m@1"]},
    }
    out = normalise(observed, _desc(conventions={"epoch_base": 1, "unknown_remote_leo": "absent"}), ("A", "B"))
    assert out["leader_epoch"] == 0 and out["replicas"]["A"]["log"] == ["m@0"]
    assert out["replicas"]["A"]["epoch_cache"] == [[0, 0]] and out["consumer"]["records"] == ["m@0"]
    assert out["replicas"]["A"]["remote_leo"] == {"B": None}
    expect = {"replicas": {"A": {"remote_leo": {"B": None}, "hw": 0}, "B": {"role": "none", "hw": 0}}}
    zero = adjust_expected(
        expect, _desc(conventions={"unknown_remote_leo": "zero", "offline_role": "kept"}), observed, {}
    )
    assert zero == {"replicas": {"A": {"remote_leo": {"B": 0}, "hw": 0}, "B": {"hw": 0}}}
    roles = adjust_expected(expect, _desc(role_fields={"follower": ("role",)}), observed, {"B": "follower"})
    assert roles["replicas"]["B"] == {"role": "none"}


def test_an_unsupported_step_field_skips_the_fixture_with_that_reason() -> None:
    description = ReferenceAdapter().describe()
    limited = Description(
        description.name,
        description.version,
        description.generations,
        description.steps,
        description.fields,
        description.replica_fields,
        step_fields={"crash": ("replica",)},
        initial_state=True,
    )

    class Limited(ReferenceAdapter):
        def describe(self) -> Description:
            return limited

    results = run_fixtures(Limited(), "limited", FIXTURES)[1]
    skipped = [r for r in results if r.outcome == "skipped"]
    assert skipped and all("uses unflushed_from, which the implementation does not honour" in r.reason for r in skipped)


def test_the_zoo_is_caught_at_settled_except_the_timing_difference() -> None:
    """No missed bugs: every wrong rule of the first zoo (its five original members) still
    fails ``settled``; the one that only answers a waiting fetch sooner (no purgatory) is a
    timing difference and passes it. (The whole zoo at settled: ``kconform sensitivity
    --level settled``, docs/suite-strength.md.)"""
    from conformance.zoo import ALIASES, ZOO

    for name in ALIASES.values():
        make = ZOO[name]
        _, results = run_fixtures(make(), name, FIXTURES, level="settled")
        failed = [r for r in results if r.outcome == "failed"]
        if name == "no-fetch-purgatory":
            assert failed == [] and highest_level([r.levels for r in results]) == "settled"
        else:
            assert failed, f"{name} passes settled"


def test_a_run_that_matches_every_expectation_never_runs_the_reference_beside_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The plan of a fixture run as written computes the reference's states only when a
    verdict needs them (coarsen._Chain): on a matching run, only the implementation works.
    A run that differs still gets its settled verdict from those states."""
    import conformance.judging.coarsen as coarsen

    applied = Counter[str]()
    real_apply = coarsen.apply

    def counting(state, step):  # type: ignore[no-untyped-def]
        applied[step.kind] += 1
        return real_apply(state, step)

    monkeypatch.setattr(coarsen, "apply", counting)
    _, results = run_fixtures(ReferenceAdapter(), "reference", FIXTURES, level="settled")
    assert Counter(r.outcome for r in results) == Counter({"passed": len(FIXTURES)})
    assert not applied
    early = _run("shape-early-answer", "settled")  # differs step by step, settles
    assert [(r.fixture, r.reason) for r in early if r.outcome != "passed"] == []
    assert applied  # the frontier needed the reference's own path there


EARLY_ELECT = Path(__file__).parent / "data" / "early-answer-then-elect.yaml"


def test_a_step_refused_as_some_reachable_reference_state_refuses_it_is_no_settled_failure() -> None:
    """After an early fetch answer the ISR may legitimately differ, so an elect the reference
    performs is refused: exact fails there, settled goes on from the states that refuse it."""
    fixtures, _ = load_fixtures([EARLY_ELECT])
    (result,) = run_fixtures(resolve("shape-early-answer"), "early", fixtures, level="settled")[1]
    assert result.outcome == "passed" and result.levels == {"exact": "failed", "settled": "passed", "safety": "passed"}
    assert [(f["step"], f["level"], f["field"]) for f in result.failures] == [(8, "exact", "(step)")]
    (reference,) = run_fixtures(ReferenceAdapter(), "reference", fixtures)[1]
    assert reference.outcome == "passed"


def test_an_errored_result_means_no_level_is_met() -> None:
    from conformance.judging.levels import level_met

    passed = {"outcome": "passed", "levels": {"exact": "passed", "settled": "passed", "safety": "passed"}}
    errored = {"outcome": "errored", "levels": {}}
    skipped = {"outcome": "skipped", "levels": {}}
    assert level_met([passed, skipped]) == "exact"
    assert level_met([passed, errored, skipped]) == "not established: 1 of 2 errored"
    assert level_met([skipped]) == "-"


def test_a_judged_run_makes_no_full_collection_and_puts_the_collector_back() -> None:
    """``collector.young_only``: while a run is judged the cyclic collector makes no full
    collection (the run's growing history is not rescanned at every one); afterwards, and
    after a run whose implementation raised, the thresholds are what they were."""
    seen: list[tuple[int, int, int]] = []

    class Recording(ReferenceAdapter):
        def step(self, step: dict[str, Any]) -> StepResult:
            seen.append(gc.get_threshold())
            if len(seen) == 3:
                raise RuntimeError("the implementation fell over")
            return super().step(step)

    before = gc.get_threshold()
    fixture = next(f for f in FIXTURES if len(f.steps) >= 4)
    _, results = run_fixtures(Recording(), "recording", [fixture])
    assert results[0].outcome == "errored" and "fell over" in results[0].reason
    assert len(seen) == 3 and all(t == (before[0], before[1], NO_FULL) for t in seen)
    assert gc.get_threshold() == before
