"""The spec's choice points (spec/replication.md, "Choice points") and the choice-aware
``settled`` level: every correct variant meets it, every defective twin fails it with the
defect named, the frontier says which choices it assumed and stays bounded, and the
reference's defaults are untouched."""

from __future__ import annotations

import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from hypothesis.strategies import DrawFn, composite

import conformance.judging.settle as settle
from conformance.corpus.format import Trace
from conformance.corpus.reading import plan_splits, read_split
from conformance.fixtures.loading import load_fixtures
from conformance.fixtures.paths import FIXTURES_DIR
from conformance.implementations.registry import resolve
from conformance.implementations.variants import VARIANTS
from conformance.judging.levels import settled_part
from conformance.judging.runner import FixtureResult, run_fixture, run_fixtures
from reference_impl import (
    State,
    StepRejected,
    apply,
    config_from_dict,
    enabled_steps,
    initial_state,
    observe,
    step_from_dict,
)
from reference_impl.choices import consume_at_most, cut_fetch_answer, elect_preferring, with_checkpoint
from reference_impl.steps import Consume, Crash, Elect, Fetch, Produce, Restart

HOME = Path(__file__).resolve().parents[1]
SPEC = (HOME / "spec" / "replication.md").read_text(encoding="utf-8")
FIXTURES, _ = load_fixtures([FIXTURES_DIR])

CORRECT = [name for name in VARIANTS if not name.endswith("-broken")]
DEFECTS = {
    "choice-elect-last-eligible-broken": {"leader", "isr"},
    "choice-fetch-one-record-broken": {"hw", "SAFE-STRONG-ISR"},
    "choice-consume-one-record-broken": {"consumer", "SAFE-CONSUMER-BELOW-HW"},
    "choice-isr-check-every-step-broken": {"isr"},
    "choice-checkpoint-every-change-broken": {"hw"},
    "choice-log-start-durable-at-once-broken": {"log_start", "log"},
}
"""Each twin and what its one bug breaks: the field (last part of its path) or the safety
property a settled failure must name."""


CHOICE_FIXTURES = [f for f in FIXTURES if "choice-points" in f.tags]
"""One fixture per choice point, each showing Kafka's resolution at a settled checkpoint."""


def _run(name: str, fixtures: list[Any] = FIXTURES) -> list[FixtureResult]:
    _, results = run_fixtures(resolve(name), name, fixtures, level="settled")
    return results


def _rule_of(name: str) -> str:
    """The choice point a variant resolves otherwise (the spec names it under the rule)."""
    return next(c for c in settle.CHOICES if f"`{name}`" in SPEC.split(f"- **{c}** — ", 1)[1].split("\n- **")[0])


def test_every_choice_point_is_in_the_spec_resolved_by_settle_and_has_a_variant() -> None:
    in_spec = re.findall(r"^- \*\*(CHOICE-\d+)\*\* — ", SPEC, flags=re.M)
    assert in_spec == [f"CHOICE-{n}" for n in range(1, len(in_spec) + 1)] and len(in_spec) >= 7
    assert sorted(settle.CHOICES) == sorted(in_spec)
    variants = set(VARIANTS) | {"shape-early-answer", "shape-round-only"}
    for rule in in_spec:
        text = SPEC.split(f"- **{rule}** — ", 1)[1].split("\n- **", 1)[0]
        named = set(re.findall(r"Variant:\s+`([a-z0-9-]+)`", text))
        assert named and named <= variants, f"{rule} names no bundled variant"
        assert "Default:" in text and "Bound:" in text and "Source:" in text, rule
    assert set(DEFECTS) == {name for name in VARIANTS if name.endswith("-broken")}
    assert {f"{name}-broken" for name in CORRECT} == set(DEFECTS)


@pytest.fixture
def frontier_sizes(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[int]]:
    """The size of every set the frontier builds, before the cap."""
    sizes: list[int] = []
    ranked = settle._ranked

    def recording(found: dict[State, Any]) -> list[State]:
        sizes.append(len(found))
        return ranked(found)

    monkeypatch.setattr(settle, "_ranked", recording)
    yield sizes


@pytest.mark.parametrize("name", CORRECT)
def test_each_variant_meets_settled_on_its_fixture_assuming_its_choice(name: str) -> None:
    results = _run(name, CHOICE_FIXTURES)
    assert [(r.fixture, r.reason) for r in results if r.outcome != "passed"] == []
    assert any(r.levels["exact"] == "failed" for r in results), f"{name} never differs from the reference"
    assumed = {n.split(":")[0] for r in results for n in r.notes if n.startswith("settled assumed")}
    assert assumed == {f"settled assumed {_rule_of(name)}"}, (name, assumed)


@pytest.mark.parametrize("name", CORRECT)
def test_each_variant_meets_settled_on_every_fixture_and_fails_exact_somewhere(
    name: str, frontier_sizes: list[int]
) -> None:
    """The whole suite (a few seconds each)."""
    results = _run(name)
    assert [(r.fixture, r.reason) for r in results if r.outcome != "passed"] == []
    assert all(r.levels["safety"] == "passed" for r in results)
    assert any(r.levels["exact"] == "failed" for r in results), f"{name} never differs from the reference"
    assert frontier_sizes and max(frontier_sizes) < settle.FRONTIER_CAP  # never cut on the bundled fixtures


@pytest.mark.parametrize("name", sorted(DEFECTS))
def test_each_twin_fails_settled_naming_its_defect(name: str) -> None:
    failed = [r for r in _run(name, CHOICE_FIXTURES) if r.outcome == "failed"]
    assert failed, f"{name} passes settled"
    named = set()
    for result in failed:
        for failure in result.failures:
            if failure["level"] == "safety":
                named.add(failure["property"])
            elif failure["level"] == "settled":
                path = failure["field"].split(".")
                named.add(path[-1] if path[0] == "replicas" else path[0])
    assert named & DEFECTS[name], (name, named)


def _reference(config: dict[str, Any], *steps: dict[str, Any]) -> tuple[State, settle.Frontier]:
    state = initial_state(config_from_dict(config))
    frontier = settle.Frontier(state, ())
    for raw in steps:
        step = step_from_dict(raw)
        state = apply(state, step)
        frontier.step(step, state)
    return state, frontier


FAILOVER = (
    {"kind": "produce", "values": ["m0"]},
    {"kind": "fetch_round", "replica": "B"},
    {"kind": "fetch_round", "replica": "C"},
    {"kind": "crash", "replica": "A"},
)


def test_assumed_names_the_choice_the_observation_needed() -> None:
    config = {"replicas": ["A", "B", "C"], "generation": "leader-epoch"}
    before, frontier = _reference(config, *FAILOVER)
    elect = Elect()
    kafka = apply(before, elect)
    frontier.step(elect, kafka)
    assert kafka.controller.leader == "B" and frontier.assumed() == []
    other = observe(elect_preferring(before, elect, "C"))
    assert frontier.match(settled_part(other), other)
    assert frontier.assumed() == ["CHOICE-3: elected C where Kafka elects B"]
    assert frontier.every  # the timing choices alone could not explain it: rebuilt with every one


def test_the_frontier_widens_to_every_choice_only_when_a_verdict_needs_it() -> None:
    config = {"replicas": ["A", "B", "C"], "generation": "leader-epoch"}
    before, frontier = _reference(config, *FAILOVER)
    kafka = apply(before, Elect())
    frontier.step(Elect(), kafka)
    assert frontier.match(settled_part(observe(kafka)), observe(kafka))
    assert not frontier.every and frontier.assumed() == []
    assert all(s.controller.leader == "B" for s in frontier.states)


def test_an_illegal_leader_does_not_hide_behind_the_election_choice() -> None:
    config = {"replicas": ["A", "B", "C"], "generation": "leader-epoch"}
    before, frontier = _reference(config, *FAILOVER, {"kind": "crash", "replica": "C"})
    after = apply(before, Elect())
    frontier.step(Elect(), after)
    wrong = {**observe(after), "leader": "C"}  # C is down: only B may lead
    assert not frontier.match({"leader": "B"}, wrong)
    assert [d.path for d in frontier.nearest({"leader": "B"}, wrong)] == ["leader"]


@pytest.mark.parametrize("lacking", [(), ("deliver_fetch",)])
def test_narrowing_on_logs_only_where_visible_steps_alone_change_them(lacking: tuple[str, ...]) -> None:
    config = {"replicas": ["A", "B"], "generation": "leader-epoch"}
    state = initial_state(config_from_dict(config))
    frontier = settle.Frontier(state, lacking)
    frontier.every = True  # every choice point from the start (as after a widening)
    for raw in ({"kind": "produce", "values": ["m0", "m1", "m2"]}, {"kind": "fetch", "replica": "B"}):
        state = apply(state, step_from_dict(raw))
        frontier.step(step_from_dict(raw), state)
    deliver = step_from_dict({"kind": "deliver_fetch", "replica": "B"})
    whole = apply(state, deliver)
    frontier.step(deliver, whole)
    one = {"replicas": {"B": {"log": ["m0@0"], "leo": 1}}}
    assert any(s.replica("B").leo == 1 for s in frontier.states)  # CHOICE-4: one of three
    frontier.narrow({"replicas": {"B": {"log": ["m0@0", "m1@0", "m2@0"], "leo": 3}}}, observe(whole))
    assert all(s.replica("B").leo == 3 for s in frontier.states) == (not lacking)
    assert frontier.match(one, one) == bool(lacking)


def test_the_defaults_are_kafkas_own() -> None:
    config = {"replicas": ["A", "B", "C"], "generation": "diverging-epoch"}
    state, _ = _reference(config, *FAILOVER)
    assert elect_preferring(state, Elect(), "B") == apply(state, Elect())  # B: first eligible
    read, _ = _reference(
        config,
        *FAILOVER[:3],
        {"kind": "produce", "values": ["m1", "m2"]},
        {"kind": "fetch_round", "replica": "B"},
        {"kind": "fetch_round", "replica": "C"},
    )
    assert consume_at_most(read, Consume(0), 1000) == apply(read, Consume(0))
    assert len(consume_at_most(read, Consume(0), 1).consumed.records) == 1  # type: ignore[union-attr]
    with pytest.raises(ValueError):
        consume_at_most(read, Consume(0), 0)
    with pytest.raises(StepRejected):
        with_checkpoint(read, "A", read.replica("A").hw + 1)  # never above the HW held


def test_a_fetch_answer_cut_keeps_what_the_leader_did() -> None:
    config = {"replicas": ["A", "B"], "generation": "leader-epoch"}
    state, _ = _reference(
        config, {"kind": "produce", "values": ["m0", "m1", "m2"], "acks": 1}, {"kind": "fetch", "replica": "B"}
    )
    cut = cut_fetch_answer(state, 0, 1)
    assert len(cut.fetch_responses[0].records) == 1
    assert cut.replicas == state.replicas and cut.fetch_responses[0].hw == state.fetch_responses[0].hw
    with pytest.raises(ValueError):
        cut_fetch_answer(state, 0, 4)


@composite
def walks(draw: DrawFn) -> tuple[dict[str, Any], list[Any]]:
    generation = draw(st.sampled_from(["hw-truncation", "leader-epoch", "diverging-epoch"]))
    config = {"replicas": ["A", "B", "C"], "generation": generation, "replica_lag_time_max_ms": 1000}
    state = initial_state(config_from_dict(config))
    steps = []
    for _ in range(draw(st.integers(3, 12))):
        choices = enabled_steps(state)
        step = draw(st.sampled_from(choices))
        state = apply(state, step)
        steps.append(step)
    return config, steps


@settings(max_examples=30, deadline=None)
@given(walks())
@example(
    (
        {"replicas": ["A", "B", "C"], "generation": "hw-truncation", "replica_lag_time_max_ms": 1000},
        [Crash("A"), Elect(), Crash("B"), Produce(("v1",), "all"), Elect(), Restart("A"), Fetch("A")],
    )
)
def test_no_choice_alters_a_record_or_puts_the_hw_past_the_log(walk: tuple[dict[str, Any], list[Any]]) -> None:
    """Whatever the choices, a record's value and an HW above every log are no resolution's.

    The logs are pinned to the reference's: a resolution may legitimately lengthen them (CHOICE-3
    elects another replica, which then takes a produce the reference's leader refused), so an HW
    "above every log" is one above every log of the state that shows it."""
    config, steps = walk
    state = initial_state(config_from_dict(config))
    frontier = settle.Frontier(state, ("deliver_fetch",))
    for step in steps:
        state = apply(state, step)
        frontier.step(step, state)
    obs = observe(state)
    longest = max(r["leo"] for r in obs["replicas"].values())
    past: dict[str, Any] = {"replicas": {name: {"leo": r["leo"]} for name, r in obs["replicas"].items()}}
    past["replicas"]["A"]["hw"] = longest + 1
    assert not frontier.match(past, past)
    leader = obs["leader"]
    log = obs["replicas"][leader]["log"] if leader else []
    if log:
        altered = {"replicas": {leader: {"log": ["forged@0", *log[1:]]}}}
        assert not frontier.match(altered, altered)


def test_early_answer_meets_settled_on_a_generated_corpus(tmp_path: Path) -> None:
    """Issue 19: 47 of 200 generated traces used to fail (a round's early answer is received
    in the round, CHOICE-1)."""
    out = tmp_path / "corpus"
    command = [
        sys.executable,
        "-m",
        "conformance.cli.main",
        "generate",
        "--traces",
        "200",
        "--seed",
        "1",
        "--out",
        str(out),
        "--backend",
        "inline",
        "--no-progress",
    ]
    subprocess.run(command, check=True, capture_output=True)
    adapter = resolve("shape-early-answer")
    description = adapter.describe()
    outcomes: dict[str, int] = {}
    for split in plan_splits([out]):
        for item in read_split(split):
            assert isinstance(item, Trace)
            result = run_fixture(adapter, description, item.fixture, "shape-early-answer", level="settled")
            outcomes[result.outcome] = outcomes.get(result.outcome, 0) + 1
    assert outcomes == {"passed": 200}
