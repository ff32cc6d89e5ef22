"""The differential machine: the reference agrees with itself through the adapter seam,
and a wrong implementation yields a shrunk witness that replays as a failing fixture."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

from conformance.adapters.base import StepResult
from conformance.adapters.in_process import ReferenceAdapter
from conformance.fixtures.loading import load_fixture_file
from conformance.implementations.registry import resolve
from conformance.judging.runner import run_fixtures
from conformance.judging.settle import Frontier
from conformance.search.stateful import fuzz, fuzz_all, witness_fixture
from conformance.zoo import ZOO
from reference_impl import Generation, apply, initial_state, observe
from reference_impl.steps import Elect


def test_reference_adapter_agrees_with_the_reference() -> None:
    for generation in Generation:
        assert fuzz(ReferenceAdapter(), generation, examples=15, steps=25, derandomize=True) is None


def test_a_mutant_yields_a_witness_that_replays_as_a_failure(tmp_path: Path) -> None:
    mutant = ZOO["no-fetch-purgatory"]
    trace = fuzz(mutant(), Generation.LEADER_EPOCH, examples=100, steps=20, derandomize=True)
    assert trace is not None
    # shrunk to the step that shows the bug (a follower's fetch, from the empty start or a drawn one)
    assert [s["kind"] for s in trace.steps] == ["fetch"]
    path = tmp_path / "witness.yaml"
    path.write_text(witness_fixture(trace))
    fixtures = load_fixture_file(path)
    _, results = run_fixtures(mutant(), "mutant", fixtures)
    assert [r.outcome for r in results] == ["failed"]
    _, results = run_fixtures(ReferenceAdapter(), "reference", fixtures)
    assert [r.outcome for r in results] == ["passed"]


class TwoDefects(ReferenceAdapter):
    """Two independent defects: the clock runs one ms fast, and a produce reports an HW
    above the LEO on the follower."""

    def step(self, step: dict[str, Any]) -> StepResult:
        result = super().step(step)
        if result.observation is None:
            return result
        obs = result.observation
        if step["kind"] == "tick":
            obs = {**obs, "clock_ms": obs["clock_ms"] + 1}
        if step["kind"] == "produce":
            reps = {k: dict(v) for k, v in obs["replicas"].items()}
            reps["B"]["hw"] = reps["B"]["leo"] + 1
            obs = {**obs, "replicas": reps}
        return StepResult(observation=obs, fired=result.fired)


def test_every_distinct_failure_is_its_own_shrunk_witness() -> None:
    """hypothesis finds several distinct failures in one search: each comes back shrunk with
    its own reason and witness, and nothing crashes."""
    report = fuzz_all(TwoDefects(), Generation.LEADER_EPOCH, examples=100, steps=10, derandomize=True)
    by_signature = {f.signature: f for f in report.failures}
    assert len(by_signature) == len(report.failures) >= 2
    assert "exact:clock_ms" in by_signature
    assert "safety:SAFE-HW-LE-LEO" in by_signature or "exact:replicas.*.hw" in by_signature
    tick = by_signature["exact:clock_ms"]
    assert [s["kind"] for s in tick.trace.steps] == ["tick"]  # shrunk
    assert "clock_ms: reference" in tick.reason
    for n, failure in enumerate(report.failures):
        assert _loads(witness_fixture(failure.trace, f"w{n}", failure.reason))
    assert report.exercised.steps["tick"] > 0 and report.exercised.rules["TICK-1"] > 0


def test_the_safety_level_needs_no_agreement_and_names_the_invariant() -> None:
    correct = fuzz_all(
        resolve("shape-round-only"), Generation.LEADER_EPOCH, examples=40, steps=20, derandomize=True, level="settled"
    )
    assert correct.failures == []
    assert correct.exercised.steps["fetch_round"] > 0  # whole rounds are proposed when split steps are lacking
    broken = fuzz_all(
        resolve("shape-hw-decrease"), Generation.LEADER_EPOCH, examples=60, steps=20, derandomize=True, level="safety"
    )
    assert broken.failures and all(f.signature.startswith("safety:SAFE-") for f in broken.failures)
    reason = broken.failures[0].reason
    assert "safety property SAFE-" in reason
    assert broken.exercised.refusals or broken.exercised.total_steps  # the own path's counts are kept


def _loads(text: str) -> list[object]:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "w.yaml"
        path.write_text(text)
        return list(load_fixture_file(path))


class RefusesElections(ReferenceAdapter):
    """Refuses every election: no reference state the visible steps reach does that."""

    def step(self, step: dict[str, Any]) -> StepResult:
        if step["kind"] == "elect":
            return StepResult(rejected="no elections here")
        return super().step(step)


def test_settled_judges_acceptance_against_every_reachable_reference_state() -> None:
    """An implementation answering a parked fetch early may legitimately refuse an elect the
    reference's own path performs (its ISR differs: tests/data/early-answer-then-elect.yaml
    was this run's false alarm); one that refuses what no reachable state refuses still fails."""
    early = fuzz_all(resolve("shape-early-answer"), Generation.DIVERGING_EPOCH, examples=60, seed=1, level="settled")
    assert [f.reason for f in early.failures] == []
    wrong = fuzz_all(RefusesElections(), Generation.DIVERGING_EPOCH, examples=60, seed=1, level="settled")
    # and it never replaces a dead leader, which the fair suffix at the end of a run notices
    signatures = {f.signature for f in wrong.failures}
    assert "settled:(step)" in signatures
    assert all(s.startswith("safety:PROGRESS-") for s in signatures - {"settled:(step)"}), signatures
    refused = next(f for f in wrong.failures if f.signature == "settled:(step)")
    assert "the reference performs it (and so does every reference state" in refused.reason


def test_a_detached_frontier_keeps_only_the_states_that_agree() -> None:
    fixture = load_fixture_file(Path(__file__).parent / "data" / "early-answer-then-elect.yaml")[0]
    state = initial_state(fixture.config)
    frontier = Frontier(state, ())
    for fs in fixture.steps[:-1]:
        state = apply(state, fs.step)
        frontier.step(fs.step, state)
    elect_a, elect_c = fixture.steps[-1].step, Elect("C")
    assert not frontier.decide(elect_c, performed=True) and not frontier.detached  # C is in no reachable ISR
    assert frontier.decide(elect_a, performed=False) and frontier.detached
    assert all(observe(s)["isr"] == ["B"] for s in frontier.states)
    frontier.step(elect_c, None)  # refused by every state left: the set is empty, whatever the reference did
    assert frontier.states == []
