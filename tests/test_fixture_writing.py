"""One fixture writer (``conformance/fixtures/writing.py``): every witness kconform writes
(fuzz, explore and fuzz's broken invariants through ``walk.witness``, replay's shrunk
corpus failures) is that writer's document, and what it writes loads and passes on the
reference."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from conformance.corpus.shrink import candidate
from conformance.corpus.shrink import fixture_yaml as shrunk_yaml
from conformance.fixtures.loading import load_fixture_file, load_fixtures
from conformance.fixtures.paths import FIXTURES_DIR
from conformance.fixtures.writing import fixture_yaml
from conformance.implementations.registry import resolve
from conformance.judging.runner import run_fixture
from conformance.search.walk import witness
from reference_impl import Config, Generation, StepRejected, apply, initial_state, observe, step_to_dict
from reference_impl.enabled import candidate_steps

HOME = Path(__file__).resolve().parents[1]
CONFIG = Config(replicas=("A", "B", "C"), generation=Generation.DIVERGING_EPOCH)


def passes_on_the_reference(text: str, path: Path) -> None:
    path.write_text(text, encoding="utf-8")
    [fixture] = load_fixture_file(path)
    adapter = resolve("reference")
    result = run_fixture(adapter, adapter.describe(), fixture, "reference")
    assert result.outcome == "passed", (result.reason, text)


def test_only_the_writer_builds_a_fixture_document() -> None:
    """The format version is written in one place; the four witness writers call it."""
    writers = []
    for path in sorted((HOME / "conformance").rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        if '"format": CURRENT_FORMAT' in text or "format=CURRENT_FORMAT" in text:
            writers.append(path.relative_to(HOME).as_posix())
    assert writers == ["conformance/fixtures/writing.py"]
    for caller in ("search/stateful.py", "search/walk.py", "corpus/shrink.py"):
        assert "from ..fixtures.writing import fixture_yaml" in (HOME / "conformance" / caller).read_text()
    assert "return witness(" in (HOME / "conformance/search/explore.py").read_text()


def test_the_document_refusals_and_the_last_expectation() -> None:
    steps: list[dict[str, Any]] = [
        {"kind": "produce", "values": ["v1"], "acks": None},
        {"kind": "fetch", "replica": "B"},
    ]
    seen = {"leader": "A"}
    doc = yaml.safe_load(
        fixture_yaml("w", "t", source="s", tags=["x"], config=CONFIG, steps=steps, rejected={1: "R-1"}, expect=seen)
    )
    assert list(doc) == ["id", "title", "source", "tags", "format", "config", "steps"]
    assert doc["steps"] == [{"do": {"kind": "produce", "values": ["v1"]}}, {"do": steps[1], "expect_rejected": "R-1"}]
    assert list(doc["config"])[:3] == ["replicas", "generation", "min_insync_replicas"]
    doc = yaml.safe_load(
        fixture_yaml(
            "w",
            "t",
            source="s",
            tags=[],
            config=CONFIG,
            steps=steps,
            expect=seen,
            description="d",
            initial={"replicas": {}},
            generation_last=True,
        )
    )
    assert list(doc) == ["id", "title", "source", "description", "tags", "format", "config", "initial", "steps"]
    assert list(doc["config"])[-1] == "generation" and doc["steps"][-1]["expect"] == seen
    none_expected = fixture_yaml("w", "t", source="s", tags=[], config=CONFIG, steps=steps, expect=None)
    assert "expect" not in none_expected


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), length=st.integers(1, 25), generation=st.sampled_from(list(Generation)))
def test_a_walk_witness_loads_and_passes_on_the_reference(
    tmp_path_factory: pytest.TempPathFactory, seed: int, length: int, generation: Generation
) -> None:
    """Random candidate steps (refused ones included) through ``walk.witness``, the path
    ``kconform explore`` and fuzz's broken invariants take."""
    config = Config(replicas=("A", "B", "C"), generation=generation)
    rng, state, path = random.Random(seed), initial_state(config), []
    refused = 0
    for _ in range(length):
        step = rng.choice(candidate_steps(state))
        path.append(step)
        try:
            state = apply(state, step)
        except StepRejected:
            refused += 1
    text = witness(config, path, "w", source="test", title="t", tags=["test"])
    doc = yaml.safe_load(text)
    assert [s["do"] for s in doc["steps"]] == [step_to_dict(s) for s in path]
    assert sum("expect_rejected" in s for s in doc["steps"]) == refused
    passes_on_the_reference(text, tmp_path_factory.mktemp("w") / "w.yaml")


def test_a_shrunk_corpus_witness_keeps_its_initial_state_and_passes(tmp_path: Path) -> None:
    fixtures, problems = load_fixtures([FIXTURES_DIR])
    assert not problems
    started = [f for f in fixtures if f.initial is not None]
    assert started, "the bundled fixtures have cases from a given initial state"
    for fixture in started[:3]:
        dos = []
        state = initial_state(fixture.config, fixture.initial)
        for fs in fixture.steps:  # the prefix the reference accepts
            try:
                state = apply(state, fs.step)
            except StepRejected:
                break
            dos.append(dict(fs.do))
        small = candidate(fixture.config, dos, fixture.id, fixture.initial)
        assert small is not None
        text = shrunk_yaml(small, "impl", "corpus.jsonl:1", "a reason")
        assert yaml.safe_load(text)["initial"] == fixture.initial
        assert yaml.safe_load(text)["steps"][-1]["expect"] == observe(state)
        passes_on_the_reference(text, tmp_path / f"{fixture.base_id.replace('/', '-')}.yaml")
