"""The differential machine: the reference agrees with itself through the adapter seam,
and a wrong implementation yields a shrunk witness that replays as a failing fixture."""

from __future__ import annotations

from pathlib import Path

from conformance.fixtures import load_fixture_file
from conformance.in_process import ReferenceAdapter
from conformance.runner import run_fixtures
from conformance.stateful import fuzz, witness_fixture
from conformance.zoo import ZOO
from reference_impl import Generation


def test_reference_adapter_agrees_with_the_reference() -> None:
    for generation in Generation:
        assert fuzz(ReferenceAdapter(), generation, examples=15, steps=25, derandomize=True) is None


def test_a_mutant_yields_a_witness_that_replays_as_a_failure(tmp_path: Path) -> None:
    mutant = ZOO["no-fetch-purgatory"]
    trace = fuzz(mutant(), Generation.LEADER_EPOCH, examples=100, steps=20, derandomize=True)
    assert trace is not None
    assert trace.steps == [{"kind": "fetch", "replica": "B"}]  # shrunk to the step that shows the bug
    path = tmp_path / "witness.yaml"
    path.write_text(witness_fixture(trace))
    fixtures = load_fixture_file(path)
    _, results = run_fixtures(mutant(), "mutant", fixtures)
    assert [r.outcome for r in results] == ["failed"]
    _, results = run_fixtures(ReferenceAdapter(), "reference", fixtures)
    assert [r.outcome for r in results] == ["passed"]
