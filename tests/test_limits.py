"""Capabilities for limits: what an implementation declares it cannot be asked is skipped
with the reason, in ``run`` and in ``fuzz``, never failed (conformance/adapters/limits.py)."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

import reference_impl
from conformance.adapters.base import Description
from conformance.adapters.in_process import FunctionAdapter, ReferenceAdapter, StepRefused
from conformance.adapters.limits import LimitsError, check, fit
from conformance.fixtures.loading import load_fixtures
from conformance.fixtures.paths import FIXTURES_DIR
from conformance.judging.runner import run_fixture
from conformance.search.stateful import fuzz_all
from reference_impl import Config, Generation


def _no_timeout_apply(state: Any, step: dict[str, Any]) -> Any:
    """The reference, except that a produce never times out (its tick leaves it waiting)."""
    try:
        after = reference_impl.apply(state, reference_impl.step_from_dict(step))
    except reference_impl.StepRejected as exc:
        raise StepRefused(exc.reason, exc.rule) from None
    if "PRODUCE-7" in after.fired:  # pretend the deadline passed unnoticed: keep the old outcomes
        return dataclasses.replace(after, produces=state.produces)
    return after


def _adapter(limits: dict[str, Any]) -> FunctionAdapter:
    base = ReferenceAdapter().describe()
    return FunctionAdapter(
        dataclasses.replace(base, name="no-produce-timeout", limits=limits),
        init=lambda config: reference_impl.initial_state(reference_impl.config_from_dict(config)),
        apply=_no_timeout_apply,
        observe=reference_impl.observe,
    )


def test_limits_are_checked() -> None:
    check({"config": {"min_insync_replicas": {"values": [2]}}, "without": ["controller"]})
    for bad in (
        {"config": {"nope": {"values": [1]}}},
        {"without": ["time_travel"]},
        {"config": {"min_insync_replicas": {}}},
    ):
        with pytest.raises(LimitsError):
            check(bad)
    with pytest.raises(ValueError, match="limits"):
        Description.from_dict({"name": "x", "capabilities": {"steps": [], "fields": [], "limits": {"without": ["x"]}}})


def test_fit_moves_a_config_inside() -> None:
    config = Config(replicas=("A", "B", "C"), min_insync_replicas=1, unclean_leader_election=True)
    fitted = fit(config, {"config": {"min_insync_replicas": {"values": [2]}}, "without": ["unclean_election"]})
    assert fitted.min_insync_replicas == 2 and fitted.unclean_leader_election is False


def test_a_missing_produce_timeout_fails_unless_declared_then_it_is_skipped() -> None:
    fixtures, problems = load_fixtures([FIXTURES_DIR])
    assert not problems
    plain, declared = _adapter({}), _adapter({"without": ["produce_timeout"]})
    failed = skipped = 0
    for fixture in fixtures:
        if fixture.initial is not None:
            continue
        a = run_fixture(plain, plain.describe(), fixture, "plain")
        b = run_fixture(declared, declared.describe(), fixture, "declared")
        if a.outcome == "failed":
            failed += 1
            assert b.outcome == "skipped" and "PRODUCE-7" in b.reason and "produce_timeout" in b.reason, b.reason
        else:
            assert b.outcome == a.outcome or b.outcome == "skipped"
        skipped += b.outcome == "skipped"
    assert failed > 0, "some fixture times a produce out"
    assert skipped >= failed


def test_config_limits_and_no_controller_skip_fixtures_with_reasons() -> None:
    fixtures, _ = load_fixtures([FIXTURES_DIR])
    ref = ReferenceAdapter()
    limited = dataclasses.replace(
        ref.describe(), limits={"config": {"min_insync_replicas": {"values": [2]}}, "without": ["controller"]}
    )
    reasons = [run_fixture(ref, limited, f, "limited").reason for f in fixtures]
    assert any("min_insync_replicas=1 is outside the implementation's limits (one of 2)" in r for r in reasons)
    assert any("needs a controller decision" in r for r in reasons)


def test_fuzz_draws_inside_the_limits_and_counts_skips() -> None:
    adapter = _adapter({"config": {"min_insync_replicas": {"max": 1}}, "without": ["produce_timeout", "controller"]})
    # the fake freezes every outcome of a step where the reference's produce timed out, so a
    # fair suffix that ticks past a deadline leaves an acknowledged produce pending forever:
    # the progress property rightly fails it, which is not what this test is about
    frozen = {"PROGRESS-ACKS": "the fake's outcomes freeze where a produce would time out"}
    report = fuzz_all(adapter, Generation.LEADER_EPOCH, examples=40, steps=25, seed=3, ignore=frozen)
    assert report.failures == []
    assert report.exercised.steps["elect"] == 0 and report.exercised.steps["deliver_leader_and_isr"] == 0
    plain = fuzz_all(_adapter({}), Generation.LEADER_EPOCH, examples=80, steps=40, seed=3, weights={"tick": 30})
    assert plain.failures, "without the declaration, a produce that never times out is a failure"
    assert report.exercised.skipped, "with it, the runs where a produce times out are skipped and counted"
