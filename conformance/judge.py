"""Judging one fixture on one implementation at every level at once, without stopping at
the first difference.

The fixture is first lowered to the steps the implementation has (``coarsen.plan``). Then
each step is sent; the answer's observation is normalised (``conventions``) and

- checked by the safety monitor (``safety``: every level includes it);
- compared with the fixture's kept expectations (``exact``): every differing step is
  recorded with the rules the reference fired there;
- at quiescent points, checked against the set of reference states the visible steps can
  reach (``settle``: the ``settled`` level).

The run stops only where states can no longer be compared: the implementation refused a
step the reference performs, or performed one the reference refuses, or could not answer;
the record says so. The caller turns the verdicts into the fixture's outcome at the level
it selected.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from reference_impl import State

from .adapter import Adapter, Description
from .coarsen import Plan, PlanStep
from .compare import MISSING, all_divergences, logs_mismatch
from .conventions import adjust_expected, normalise
from .fixtures import Fixture
from .levels import settled_part
from .safety import SafetyMonitor
from .schemas import first_error
from .settle import INTERNAL_BOUND, Frontier
from .wire import wire_step

SPLIT_KINDS = (
    "fetch",
    "deliver_fetch",
    "epoch_request",
    "deliver_epoch",
    "deliver_leader_and_isr",
    "deliver_alter_partition",
)


class CannotAnswer(Exception):
    """The implementation failed to answer (the fixture is errored)."""

    def __init__(self, reason: str, detail: str = "", steps_run: int = 0) -> None:
        super().__init__(reason)
        self.reason, self.detail, self.steps_run = reason, detail, steps_run


@dataclass
class Judgement:
    failures: list[dict[str, Any]] = field(default_factory=list)
    """Every divergence: ``level`` (exact / settled / safety), step, kind, line, field,
    expected, actual, rules (for safety: ``property``)."""
    checked: int = 0
    expectations: int = 0
    notes: list[str] = field(default_factory=list)
    stopped: str = ""
    steps_run: int = 0
    observed: dict[int, dict[str, Any]] = field(default_factory=dict)
    """The implementation's observation (as sent) at each fixture step number with a failure."""

    def verdicts(self, safety_only: bool = False) -> dict[str, str | None]:
        levels = {f["level"] for f in self.failures}
        safe = "failed" if "safety" in levels else "passed"
        if safety_only:
            return {"exact": None, "settled": None, "safety": safe}
        settled = "failed" if levels & {"settled", "safety", "stop"} else "passed"
        exact = "failed" if levels else "passed"
        return {"exact": exact, "settled": settled, "safety": safe}


def _show(value: Any) -> Any:
    return "(not reported)" if value is MISSING else value


def _roles(observation: dict[str, Any] | None) -> dict[str, str]:
    reps = (observation or {}).get("replicas") or {}
    return {name: str(r["role"]) for name, r in reps.items() if isinstance(r, dict) and r.get("role")}


def judge(
    adapter: Adapter,
    description: Description,
    fixture: Fixture,
    lowered: Plan,
    comparable: Any,
    trace: list[tuple[str, ...]] | None = None,
    safety_only: bool = False,
    check_shape: bool = True,
) -> Judgement:
    """Run ``fixture`` on ``adapter`` (already reset) and judge it. Raises ``CannotAnswer``."""
    result = Judgement(expectations=lowered.expectations, notes=list(lowered.notes), stopped=lowered.stopped)
    result.checked = lowered.checked
    monitor = SafetyMonitor(fixture.config.replicas, fixture.generation.value)
    lacking = frozenset(k for k in SPLIT_KINDS if k not in description.steps)
    frontier = Frontier(lowered.initial, lacking) if lowered.initial is not None and not safety_only else None
    steps_by_index = {fs.index: fs for fs in fixture.steps}
    produced = 0
    observation: dict[str, Any] | None = None
    shape_checked = False
    last_check = max((n for n, ps in enumerate(lowered.steps) if ps.checks), default=-1)
    raw: dict[str, Any] | None = None
    noted = 0

    def note_observed() -> None:
        nonlocal noted
        for failure in result.failures[noted:]:
            result.observed.setdefault(failure["step"], raw or {})
        noted = len(result.failures)

    for n, ps in enumerate(lowered.steps):
        note_observed()
        fs = steps_by_index[ps.covers[0]] if ps.covers else steps_by_index[_next_cover(lowered, n)]
        rules = list(trace[fs.index]) if trace is not None and fs.index < len(trace) else []
        where = {"step": fs.number, "kind": fs.step.kind, "line": fs.line, "why": fs.why or "", "rules": rules}
        if ps.internal:
            if frontier is not None:
                frontier.step(ps.step, _state_of(ps), internal=True)
        else:
            do = wire_step(ps.step, produced)
            try:
                answer = adapter.step(do)
            except Exception as exc:
                from .runner import _fault

                message, detail = _fault(exc)
                raise CannotAnswer(
                    f"step {fs.number} ({fs.step.kind}) at {fixture.path}:{fs.line}: {message}", detail, fs.index
                ) from None
            result.steps_run = fs.number
            raw = answer.observation
            if answer.rejected is None and do["kind"] == "produce":
                produced += 1
            if answer.rejected is not None or ps.rejected is not None:
                if safety_only:
                    if answer.rejected is None and answer.observation is not None:
                        observation = normalise(answer.observation, description, fixture.config.replicas)
                        _safety(result, monitor, do, observation, where)
                    continue
                if (answer.rejected is None) != (ps.rejected is None):
                    expected = "accepted" if ps.rejected is None else f"rejected ({ps.rejected})"
                    rule = f" [{answer.rule}]" if answer.rule else ""
                    actual = "accepted" if answer.rejected is None else f"rejected{rule}: {answer.rejected}"
                    failure = {**where, "level": "stop", "field": "(step)", "expected": expected, "actual": actual}
                    # settled: not a failure if a reference state the visible steps reach does the same
                    if frontier is None or not frontier.decide(ps.step, performed=answer.rejected is None):
                        result.failures.append(failure)
                        result.stopped = (
                            f"step {fs.number} ({fs.step.kind}): {actual} where the reference is {expected}; "
                            "the states can no longer be compared, so the run ends here"
                        )
                        break
                    result.failures.append({**failure, "level": "exact", "note": _DETACHED})
                    if answer.rejected is None and answer.observation is not None:
                        observation = normalise(answer.observation, description, fixture.config.replicas)
                        _safety(result, monitor, do, observation, where)
                    continue
                if frontier is not None and not frontier.detached:
                    frontier.refuse(ps.step)
                elif frontier is not None and not frontier.decide(ps.step, performed=False):
                    result.failures.append(
                        {
                            **where,
                            "level": "settled",
                            "field": "(step)",
                            "expected": "accepted",
                            "actual": "rejected",
                            "note": "every reference state the visible steps reach performs it",
                        }
                    )
                continue
            if answer.observation is None:
                raise CannotAnswer(f"step {fs.number} ({fs.step.kind}) at {fixture.path}:{fs.line}: no observation")
            if check_shape and not shape_checked:
                shape_checked = True
                problem = first_error(answer.observation, "definitions", "observation")
                if problem is not None:
                    raise CannotAnswer(
                        f"step {fs.number} ({fs.step.kind}) at {fixture.path}:{fs.line}: the observation does not "
                        f"fit the protocol schema (spec/adapter-messages.schema.json, observation): {problem}",
                        "observation: " + json.dumps(answer.observation)[:2000],
                        fs.number,
                    )
            observation = normalise(answer.observation, description, fixture.config.replicas)
            _safety(result, monitor, do, observation, where)
            if frontier is not None:
                frontier.step(ps.step, _state_of(ps))
        if safety_only or observation is None:
            continue
        for check in ps.checks:
            if not check.expect and not check.logs_match:
                continue
            cfs = steps_by_index[check.index]
            cwhere = {**where, "step": cfs.number, "kind": cfs.step.kind, "line": cfs.line, "why": cfs.why or ""}
            if trace is not None and check.index < len(trace):
                cwhere["rules"] = list(trace[check.index])
            if check.logs_match and "log" in description.replica_fields:
                found = logs_mismatch(check.logs_match, observation, f"logs_match[{','.join(check.logs_match)}]")
                if found is not None:
                    failure = {**cwhere, "level": "exact", "field": found.path, "expected": found.expected}
                    result.failures.append({**failure, "actual": _show(found.actual)})
            if not check.expect:
                continue
            roles = _roles(ps.observation) if description.role_fields else {}
            expected = comparable(adjust_expected(check.expect, description, observation, roles))
            exact = all_divergences(expected, observation)
            for d in exact:
                result.failures.append(
                    {**cwhere, "level": "exact", "field": d.path, "expected": d.expected, "actual": _show(d.actual)}
                )
            if frontier is None:
                continue
            when = None if n == last_check else ps.quiescent
            if not exact:  # the reference's own path matches: no verdict, the filter can wait
                frontier.keep(_settled_of(expected), observation, when)
                if when is not None:  # not quiescent: only the logs can be compared (settle.py)
                    frontier.narrow(_settled_of(expected), observation)
                continue
            part = settled_part(expected)
            if not part:
                continue
            misses = all_divergences(part, observation)
            if not misses:
                frontier.keep(part, observation, when)
            elif not (n == last_check or ps.quiescent()):
                frontier.narrow(part, observation)
                continue
            elif not frontier.match(part, observation):
                for d in frontier.nearest(part, observation) or misses:  # against the closest state
                    result.failures.append(
                        {
                            **cwhere,
                            "level": "settled",
                            "field": d.path,
                            "expected": d.expected,
                            "actual": _show(d.actual),
                            "note": "no reference path with these visible steps (any resolution of the choice "
                            f"points, and up to {INTERNAL_BOUND} internal steps after each) reaches this",
                        }
                    )
    note_observed()
    if frontier is not None:  # the choice points settled had to resolve otherwise than Kafka (settle.py)
        result.notes.extend(f"settled assumed {choice}" for choice in frontier.assumed())
    return result


_DETACHED = (
    f"a reference state the visible steps reach (up to {INTERNAL_BOUND} internal steps after each) does the same, "
    "so settled goes on from those states"
)


def _next_cover(lowered: Plan, n: int) -> int:
    for ps in lowered.steps[n:]:
        if ps.covers:
            return ps.covers[0]
    return lowered.steps[n - 1].covers[-1] if n else 0


def _settled_of(expected: dict[str, Any]) -> Callable[[], dict[str, Any]]:
    """The settled part of ``expected``, cut only if the frontier is ever needed."""
    return lambda: settled_part(expected)


def _state_of(ps: PlanStep) -> Callable[[], State]:
    """The reference's state after ``ps``, computed only if the frontier is ever needed."""
    return lambda: ps.state


def _safety(
    result: Judgement, monitor: SafetyMonitor, do: dict[str, Any], observation: dict[str, Any], where: dict[str, Any]
) -> None:
    for finding in monitor.observe(do, observation):
        result.failures.append(
            {
                **where,
                "level": "safety",
                "field": finding.property,
                "property": finding.property,
                "expected": "holds",
                "actual": finding.detail,
            }
        )


__all__ = ["CannotAnswer", "Judgement", "PlanStep", "judge"]
