"""Whom the judge trusts: only kconform's own reference goes unchecked.

``ReferenceAdapter.trusted`` skips the observation shape check, and its
``shares_observations`` lets the judge settle unchanged parts by identity. A subclass is
another implementation (a zoo member, a rule knockout, a user's variant of the reference)
and inherits neither: a zoo member reporting a high watermark of -1 went unchecked in
process while the same member over stdio was checked. These tests pin the boundary, that
an implementation gets one verdict in process and over the wire, and that
``kconform sensitivity`` counts an answer outside the protocol as the kill it is.
"""

from __future__ import annotations

import json
import sys
from fnmatch import fnmatch
from pathlib import Path
from typing import Any

import pytest

from conformance.adapters.base import StepResult
from conformance.adapters.in_process import ReferenceAdapter
from conformance.adapters.stdio import StdioAdapter
from conformance.fixtures.loading import Fixture, load_fixtures
from conformance.fixtures.paths import FIXTURES_DIR
from conformance.judging import runner
from conformance.judging.coarsen import plan
from conformance.judging.runner import reference_trace, run_fixtures
from conformance.search.sensitivity import judge
from conformance.zoo import get
from conformance.zoo.base import Member, Mutant

ROOT = Path(__file__).resolve().parent.parent
SERVE = [sys.executable, str(ROOT / "tests" / "fakes" / "serve_impl.py")]
MEMBER = "follower-hw-from-error-answer"
"""Takes the HW of an error answer (-1) as its own: outside the observation schema."""


@pytest.fixture(scope="module")
def fixtures() -> list[Fixture]:
    loaded, problems = load_fixtures([FIXTURES_DIR])
    assert not problems
    return loaded


def _some(fixtures: list[Fixture], *patterns: str) -> list[Fixture]:
    chosen = [f for f in fixtures if any(fnmatch(f.id, p) for p in patterns)]
    assert chosen, patterns
    return chosen


class _Variant(ReferenceAdapter):
    """A user's variant of the reference that declares nothing."""


class _Vouched(ReferenceAdapter):
    trusted = True


def test_only_the_reference_itself_is_trusted() -> None:
    assert ReferenceAdapter.trusted and ReferenceAdapter.shares_observations
    assert not _Variant.trusted and not _Variant.shares_observations
    member = get(MEMBER).cls
    assert issubclass(member, Mutant)
    assert not member.trusted and member.shares_observations  # it keeps the sharing promise only
    assert _Vouched.trusted and not _Vouched.shares_observations  # declared in its own body


class _NegativeFollowerHw(ReferenceAdapter):
    """Answers as the reference, but reports a follower's HW as -1 once it has one
    (a copy: the reference's own observation is left alone)."""

    def step(self, step: dict[str, Any]) -> StepResult:
        result = super().step(step)
        observation = result.observation
        if observation is None:
            return result
        replicas = dict(observation["replicas"])
        leader = observation.get("leader")
        for name, replica in replicas.items():
            if name != leader and replica.get("hw", 0) > 0:
                replicas[name] = {**replica, "hw": -1}
                return StepResult(observation={**observation, "replicas": replicas}, fired=result.fired)
        return result


def test_a_variant_of_the_reference_is_shape_checked(fixtures: list[Fixture]) -> None:
    """The cheapest wrong variant, a HW of -1, is named at the step it is reported."""
    chosen = _some(fixtures, "seed-01*")
    _, results = run_fixtures(_NegativeFollowerHw(), "variant", chosen)
    errored = [r for r in results if r.outcome == "errored"]
    assert errored, [(r.fixture, r.outcome) for r in results]
    for r in errored:
        assert r.malformed and "hw: -1 is below the minimum 0" in r.reason, r.reason
        assert r.to_dict()["malformed"] is True
    assert all(r.outcome != "passed" for r in results if r.fixture in {e.fixture for e in errored})


def test_a_zoo_member_gets_one_verdict_in_process_and_over_stdio(fixtures: list[Fixture]) -> None:
    """Every bundled fixture the member's HW of -1 shows in, and a few it does not: the
    records are equal field by field (before, in process said ``failed`` or ``passed``
    where stdio said ``errored``)."""
    chosen = _some(
        fixtures,
        "follower-ignores-error-answer-hw*",
        "kip-320-fencing",
        "fetcher-fenced-fetch*",
        "deposed-leader-error-answer-keeps-follower-hw*",
        "seed-01*",
    )
    traces = {f.id: reference_trace(f) for f in chosen}
    records: dict[str, list[dict[str, Any]]] = {}
    for where, adapter in (("in process", get(MEMBER).build()), ("stdio", StdioAdapter([*SERVE, f"zoo:{MEMBER}"]))):
        try:
            _, results = run_fixtures(adapter, MEMBER, chosen, traces)
        finally:
            adapter.close()
        # (``detail`` quotes the observation as sent: a replica's fields may come in another
        # order once rebuilt from deltas)
        records[where] = [{k: v for k, v in r.to_dict().items() if k not in ("duration_ms", "detail")} for r in results]
        assert all(r.detail.startswith("observation: ") for r in results if r.malformed)
    assert json.dumps(records["in process"], default=str) == json.dumps(records["stdio"], default=str)
    outcomes = {r["fixture"]: (r["outcome"], r.get("malformed", False)) for r in records["in process"]}
    assert outcomes["kip-320-fencing"] == ("errored", True)  # passed in process before
    assert outcomes["follower-ignores-error-answer-hw/leader-epoch"] == ("errored", True)


class _Raises(Mutant):
    """Raises at its third step: a bug in the member, not a detection."""

    def step(self, step: dict[str, Any]) -> StepResult:
        self.steps = getattr(self, "steps", 0) + 1
        if self.steps == 3:
            raise RuntimeError("the member's own bug")
        return super().step(step)

    def reset(self, config: dict[str, Any], initial: dict[str, Any] | None = None) -> None:
        self.steps = 0
        super().reset(config, initial)


def test_sensitivity_counts_an_answer_outside_the_protocol_as_a_kill(fixtures: list[Fixture]) -> None:
    chosen = _some(fixtures, "follower-ignores-error-answer-hw/leader-epoch")
    traces = {f.id: reference_trace(f) for f in chosen}
    for level in ("exact", "safety"):
        verdict = judge(get(MEMBER), chosen, traces, level)
        assert not verdict.errors and not verdict.errored
        [kill] = verdict.kills
        # the step the -1 was reported at (5 of 5), with the rule the reference fires there
        assert (kill.step, kill.length, kill.rules) == (5, 5, ("FOLLOWER-FETCH-3",)), kill
    raising = Member("raises", 0, "test", ("leader-epoch",), ("HW-FOLLOWER-1",), _Raises)
    verdict = judge(raising, chosen, traces)
    assert not verdict.kills and verdict.errors and "the member's own bug" in verdict.errors[0]


def test_the_reference_coverage_is_computed_once_per_fixture_and_step_kinds(
    fixtures: list[Fixture], monkeypatch: pytest.MonkeyPatch
) -> None:
    """``kconform sensitivity`` judges each fixture on 58 members: the reference's own
    coverage of a fixture is one value, and the cache gives exactly it."""
    chosen = _some(fixtures, "seed-0*")
    description = ReferenceAdapter().describe()
    fewer = type(description)(**{**description.__dict__, "steps": tuple(s for s in description.steps if s != "tick")})
    calls: list[str] = []
    real = runner.reference_coverage

    def counted(fixture: Fixture, lowered: Any, description: Any) -> Any:
        calls.append(fixture.id)
        return real(fixture, lowered, description)

    monkeypatch.setattr(runner, "reference_coverage", counted)
    monkeypatch.setattr(runner, "_COVERAGE", {})
    for _ in range(2):
        for d in (description, fewer):
            for f in chosen:
                lowered = plan(f, frozenset(d.steps))
                assert runner.reference_coverage_of(f, lowered, d) == real(f, lowered, d)
    assert sorted(calls) == sorted([f.id for f in chosen] * 2)  # once per fixture and step kinds


class _UpdatesInPlace(ReferenceAdapter):
    """Keeps one observation dict and updates it in place, while promising not to
    (``shares_observations``), and reports every HW one too high from its third step."""

    shares_observations = True
    honest_for = 0
    """Steps answered with new objects before it starts updating in place."""

    def reset(self, config: dict[str, Any], initial: dict[str, Any] | None = None) -> None:
        super().reset(config, initial)
        self.steps, self.last = 0, None

    def step(self, step: dict[str, Any]) -> StepResult:
        result = super().step(step)
        self.steps += 1
        if result.observation is None:
            return result
        fresh = {**result.observation, "replicas": {k: dict(v) for k, v in result.observation["replicas"].items()}}
        in_place = self.last is not None and self.steps > self.honest_for
        observation: dict[str, Any] = self.last if in_place else fresh  # type: ignore[assignment]
        if in_place:
            for name, replica in fresh["replicas"].items():
                observation["replicas"].setdefault(name, {}).update(replica)
            observation.update({k: v for k, v in fresh.items() if k != "replicas"})
        if self.steps >= 3:
            for replica in observation["replicas"].values():
                if isinstance(replica.get("hw"), int):
                    replica["hw"] += 1
        self.last = observation
        return StepResult(observation=observation, fired=result.fired)


def test_a_broken_sharing_promise_is_an_error_not_a_pass(fixtures: list[Fixture]) -> None:
    """Judged by identity, an adapter updating one dict in place would have its changes
    taken as none; the judge checks the promise on each run's first observations and names
    the broken one. Without the promise the same adapter fails; with it, it never passes
    a case the honest one fails."""
    chosen = _some(fixtures, "seed-0*", "kip-320-fencing", "follower-ignores-error-answer-hw*")

    class _Honest(_UpdatesInPlace):
        shares_observations = False

    _, lying = run_fixtures(_UpdatesInPlace(), "in-place", chosen)
    _, honest = run_fixtures(_Honest(), "in-place-honest", chosen)
    verdict = {r.fixture: r.outcome for r in honest}
    assert "failed" in verdict.values()
    broken = [r for r in lying if r.outcome == "errored"]
    assert broken
    assert all("declares shares_observations" in r.reason and "was changed after" in r.reason for r in broken)
    assert not any(r.malformed for r in broken)  # the adapter's promise, not an answer outside the protocol
    assert all(verdict[r.fixture] == "passed" for r in lying if r.outcome == "passed")
    assert all(r.outcome in ("errored", verdict[r.fixture]) for r in lying)


def test_the_report_says_an_answer_was_outside_the_protocol(fixtures: list[Fixture]) -> None:
    """An errored case is a crash or a timeout unless the report says otherwise: a
    malformed answer is the implementation's defect, and its failure table says so."""
    from conformance.reports.results import Implementation, run_suite
    from conformance.reports.text import markdown

    chosen = _some(fixtures, "kip-320-fencing", "seed-01*")
    doc = run_suite([Implementation(f"zoo:{MEMBER}", get(MEMBER).build())], chosen)
    text = markdown(doc)
    assert f"zoo:{MEMBER} / kip-320-fencing: ERROR (an answer outside the protocol)" in text
    assert "(an answer outside the protocol)" not in text.replace(
        f"zoo:{MEMBER} / kip-320-fencing: ERROR (an answer outside the protocol)", ""
    )


def test_a_promise_broken_late_in_a_run_is_caught_too(fixtures: list[Fixture]) -> None:
    """Honest for five steps, then one dict updated in place: the check at the eighth
    observation (a power of two) sees the ninth change it."""

    class _Late(_UpdatesInPlace):
        honest_for = 5

    long = [f for f in fixtures if len(f.steps) >= 12 and not any(fs.expect_rejected for fs in f.steps)][:5]
    assert long
    _, results = run_fixtures(_Late(), "late", long)
    caught = [r for r in results if r.outcome == "errored"]
    assert caught, [(r.fixture, r.outcome, r.reason) for r in results]
    for r in caught:
        assert "declares shares_observations" in r.reason and "at step 8 " in r.reason, r.reason
