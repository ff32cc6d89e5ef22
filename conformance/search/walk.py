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

import yaml

from reference_impl import Config, State, Step, StepRejected, apply, initial_state, observe, step_to_dict

from ..fixtures.format import CURRENT_FORMAT
from ..fixtures.loading import Fixture, FixtureStep
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
    description: str = "",
    level: str = "exact",
    upto: int | None = None,
) -> str:
    """The run as a YAML fixture for ``kconform run``, cut after step ``upto`` (1-based;
    the whole run by default): every step, those the reference refuses expected to be
    refused, and the last one expecting the reference's whole observation. At level
    ``safety`` nothing is expected (the properties judge the implementation alone)."""
    steps = list(steps)[:upto] if upto else list(steps)
    walked = walk(config, steps, fixture_id, source=source)
    out: list[dict[str, Any]] = []
    for i, fs in enumerate(walked.fixture.steps):
        entry: dict[str, Any] = {"do": {k: v for k, v in fs.do.items() if v is not None}}
        if i in walked.rejected:
            entry["expect_rejected"] = walked.rejected[i]
        out.append(entry)
    last = len(out) - 1
    if out and level != "safety" and last not in walked.rejected:
        out[-1]["expect"] = walked.observations[last]
    data = {k: v for k, v in config.to_dict().items() if v is not None}
    generation = data.pop("generation")
    doc: dict[str, Any] = {
        "id": fixture_id,
        "title": title,
        "source": source,
        "description": description or f"found by {source}",
        "tags": [source.split()[-1] if source.startswith("kconform") else source],
        "format": CURRENT_FORMAT,
        "config": {**data, "generation": generation},
        "steps": out,
    }
    return yaml.safe_dump(doc, sort_keys=False, allow_unicode=True, width=120)


__all__ = ["Walked", "walk", "witness"]
