"""A run of steps as a fixture: how generated runs reach the one judging engine.

``kconform fuzz`` draws random runs, ``kconform explore`` enumerates paths, ``kconform
generate`` writes corpus traces. None of them judges an implementation itself: each turns
its run into a ``Fixture`` whose every step expects the reference's whole observation (or
the reference's refusal), and the fixture runner (``runner.run_fixture`` -> ``judge.py``)
judges it, with the same coarsening, conventions, role fields, quiescence, internal steps,
settled frontier, safety monitor and levels as ``kconform run``. So a run judged by fuzz,
explore, replay or run gets the same verdict (``tests/test_one_judge.py``).

A witness (``witness``) is the same run cut at its first failing step, expecting the
reference's observation there: ``kconform run`` on it fails the same way.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from reference_impl import Config, State, Step, StepRejected, apply, initial_state, observe, step_to_dict

from ..fixtures.loading import Fixture, FixtureStep
from ..fixtures.writing import fixture_yaml
from ..judging.runner import RuleTrace


@dataclass(frozen=True)
class Walked:
    """A run on the reference: the fixture, the rules fired per step, and the reference's
    observation after each step (None where it refused the step)."""

    fixture: Fixture
    rules: RuleTrace
    observations: tuple[dict[str, Any] | None, ...]
    rejected: dict[int, str]
    """Step index -> the rule (or reason) of each step the reference refuses."""


def walk(
    config: Config,
    steps: Sequence[Step],
    fixture_id: str,
    *,
    source: str,
    title: str = "",
    group: str = "generated",
    initial: dict[str, Any] | None = None,
    start: State | None = None,
) -> Walked:
    """Run ``steps`` on the reference from ``config`` (or ``initial``) and return them as a
    fixture expecting the reference's whole observation after every step."""
    state = start if start is not None else initial_state(config, initial)
    fixture_steps: list[FixtureStep] = []
    rules: RuleTrace = []
    observations: list[dict[str, Any] | None] = []
    rejected: dict[int, str] = {}
    for i, step in enumerate(steps):
        do = step_to_dict(step)
        try:
            state = apply(state, step)
        except StepRejected as exc:
            why = exc.rule or exc.reason
            rejected[i] = why
            rules.append((exc.rule,) if exc.rule else ())
            observations.append(None)
            fixture_steps.append(FixtureStep(i, step, do, None, why, None, None, i + 1))
            continue
        seen = observe(state)
        rules.append(tuple(dict.fromkeys(state.fired)))
        observations.append(seen)
        fixture_steps.append(FixtureStep(i, step, do, seen, None, None, None, i + 1))
    fixture = Fixture(
        id=fixture_id,
        base_id=fixture_id,
        title=title or f"{source} run {fixture_id}",
        source=source,
        description="",
        tags=(group,),
        rules=(),
        generation=config.generation,
        config=config,
        steps=tuple(fixture_steps),
        path=f"<{source}>",
        line=1,
        group=group,
        initial=initial,
    )
    return Walked(fixture, rules, tuple(observations), rejected)


def witness(
    config: Config,
    steps: Sequence[Step],
    fixture_id: str,
    *,
    source: str,
    title: str,
    tags: Sequence[str],
    description: str | None = None,
    level: str = "exact",
    upto: int | None = None,
) -> str:
    """The run as a YAML fixture for ``kconform run``, cut after step ``upto`` (1-based;
    the whole run by default): every step, those the reference refuses expected to be
    refused, and the last one expecting the reference's whole observation. At level
    ``safety`` nothing is expected (the properties judge the implementation alone)."""
    steps = list(steps)[:upto] if upto else list(steps)
    walked = walk(config, steps, fixture_id, source=source)
    return fixture_yaml(
        fixture_id,
        title,
        source=source,
        description=description,
        tags=tags,
        config=config,
        steps=[fs.do for fs in walked.fixture.steps],
        rejected=walked.rejected,
        expect=walked.observations[-1] if steps and level != "safety" else None,
    )


__all__ = ["Walked", "walk", "witness"]
