"""The fixture runner: replay fixtures against an implementation, one outcome each.

Every fixture selected lands in exactly one outcome:

- ``passed``: every stated (and exposed) field matched after every step;
- ``failed``: the first divergence (step number, step kind, field path, expected, actual,
  and the spec rules the reference fired at that step), or a step accepted that should have
  been rejected, or the reverse;
- ``errored``: the implementation could not answer (crash, hang, invalid message, an
  observation that does not fit the protocol schema, refused config), with the reason and
  diagnostics;
- ``skipped``: the implementation lacks the generation, a step kind, or every field the
  fixture checks; the reason says which.

Steps are numbered from 1 in every record and report ("step 3" is the third entry of the
fixture's ``steps``). Each step is sent complete (``wire.py``: defaults spelled out, the
automatic produce id). The first observation of each fixture, and any observation that
differs from what the fixture expects, is checked against the protocol schema first, so
a malformed reply errors the fixture instead of failing it with a confusing diff.

The runner emits plain records (``FixtureResult.to_dict``); reports are built from them.
"""

from __future__ import annotations

import json
import time
import traceback
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from reference_impl import StepRejected, initial_state
from reference_impl import apply as reference_apply

from .adapter import Adapter, AdapterError, Description
from .compare import MISSING, all_divergences, first_divergence
from .fixtures import Fixture, FixtureStep
from .schemas import first_error
from .step_states import step_states
from .wire import wire_step

OUTCOMES = ("passed", "failed", "errored", "skipped")


@dataclass
class FixtureResult:
    implementation: str
    fixture: str
    outcome: str
    reason: str = ""
    divergence: dict[str, Any] | None = None
    steps_run: int = 0
    duration_ms: float = 0.0
    detail: str = ""
    """Diagnostics for errored results: captured stderr, the last exchange."""
    rules: list[str] = field(default_factory=list)
    """Spec rules the reference fires on this fixture (what passing it exercises)."""
    expected: str = "pass"
    """``pass``, or ``fail`` when an expectations file marks it (then XFAIL / XPASS)."""
    expected_reason: str = ""

    @property
    def status(self) -> str:
        """PASS / FAIL / ERROR / SKIP, or XFAIL / XPASS for a fixture expected to fail."""
        if self.outcome == "skipped":
            return "SKIP"
        if self.expected == "fail":
            return "XPASS" if self.outcome == "passed" else "XFAIL"
        return {"passed": "PASS", "failed": "FAIL", "errored": "ERROR"}[self.outcome]

    @property
    def unexpected(self) -> bool:
        """True when this result should fail the run."""
        return self.status in ("FAIL", "ERROR", "XPASS")

    def to_dict(self) -> dict[str, Any]:
        return {
            "implementation": self.implementation,
            "fixture": self.fixture,
            "outcome": self.outcome,
            "status": self.status,
            "expected": self.expected,
            "expected_reason": self.expected_reason,
            "reason": self.reason,
            "divergence": self.divergence,
            "steps_run": self.steps_run,
            "duration_ms": round(self.duration_ms, 3),
            "detail": self.detail,
            "rules": self.rules,
        }


def _show(value: Any) -> Any:
    return "(not reported)" if value is MISSING else value


def comparable(expect: dict[str, Any], description: Description) -> dict[str, Any]:
    """The part of an expectation this implementation reports (its capabilities)."""
    out: dict[str, Any] = {}
    for key, value in expect.items():
        if key not in description.fields:
            continue
        if key == "replicas":
            replicas = {
                name: {f: v for f, v in fields_.items() if f in description.replica_fields}
                for name, fields_ in value.items()
            }
            replicas = {name: fields_ for name, fields_ in replicas.items() if fields_}
            if replicas:
                out[key] = replicas
        else:
            out[key] = value
    return out


def skip_reason(fixture: Fixture, description: Description) -> str | None:
    """Why this implementation cannot run this fixture, or None."""
    if fixture.generation.value not in description.generations:
        return f"generation {fixture.generation.value} not supported (supports: {', '.join(description.generations)})"
    missing = sorted({s.step.kind for s in fixture.steps} - set(description.steps))
    if missing:
        return f"step kinds not supported: {', '.join(missing)}"
    stated = [s for s in fixture.steps if s.expect]
    if stated and not any(comparable(s.expect or {}, description) for s in stated):
        return "reports none of the fields this fixture checks"
    return None


RuleTrace = list[tuple[str, ...]]
"""The spec rules the reference fires at each step of a fixture, in step order."""


def reference_trace(fixture: Fixture) -> RuleTrace:
    """Per step, the rules the reference fires (for a rejected step: its guard's rule)."""
    state = initial_state(fixture.config)
    out: RuleTrace = []
    for fs in fixture.steps:
        try:
            state = reference_apply(state, fs.step)
        except StepRejected as exc:  # a rejection: its guard is the rule exercised
            out.append((exc.rule,) if exc.rule else ())
            continue
        out.append(tuple(dict.fromkeys(state.fired)))
    return out


def reference_rules(fixture: Fixture, trace: RuleTrace | None = None) -> list[str]:
    """The spec rules the reference fires while running ``fixture`` (sorted)."""
    return sorted({rule for rules in (trace if trace is not None else reference_trace(fixture)) for rule in rules})


def run_fixture(
    adapter: Adapter,
    description: Description,
    fixture: Fixture,
    impl_id: str,
    trace: RuleTrace | None = None,
) -> FixtureResult:
    """Run one fixture on one implementation; never raises for implementation faults.

    ``trace`` (from ``reference_trace``) names the rules fired at a divergent step.
    """
    started = time.perf_counter()
    result = FixtureResult(implementation=impl_id, fixture=fixture.id, outcome="passed")
    check_shape = not getattr(adapter, "trusted", False)
    shape_checked = False

    def finish(outcome: str, reason: str = "", **extra: Any) -> FixtureResult:
        result.outcome = outcome
        result.reason = reason
        for key, value in extra.items():
            setattr(result, key, value)
        result.duration_ms = (time.perf_counter() - started) * 1000
        return result

    reason = skip_reason(fixture, description)
    if reason:
        return finish("skipped", reason)
    config = fixture.config.to_dict()
    try:
        adapter.reset(config)
    except Exception as exc:  # an implementation's fault must not end the run
        message, detail = _fault(exc)
        return finish("errored", f"reset: {message}", detail=detail)
    produced = 0
    for fs in fixture.steps:
        where = f"step {fs.number} ({fs.step.kind}) at {fixture.path}:{fs.line}"
        rules = list(trace[fs.index]) if trace is not None and fs.index < len(trace) else []
        do = wire_step(fs.step, produced)
        try:
            answer = adapter.step(do)
        except Exception as exc:
            message, detail = _fault(exc)
            return finish("errored", f"{where}: {message}", detail=detail, steps_run=fs.index)
        result.steps_run = fs.number
        if answer.rejected is None and do["kind"] == "produce":
            produced += 1
        if fs.expect_rejected:
            if answer.rejected is None:
                return finish(
                    "failed",
                    f"{where}: accepted a step that must be rejected ({fs.expect_rejected})",
                    divergence=_divergence(fs, "(step)", f"rejected ({fs.expect_rejected})", "accepted", rules=rules)
                    | step_states(fixture, fs.index, answer.observation),
                )
            continue
        if answer.rejected is not None:
            rule = f" [{answer.rule}]" if answer.rule else ""
            return finish(
                "failed",
                f"{where}: rejected a step that must be accepted{rule}: {answer.rejected}",
                divergence=_divergence(fs, "(step)", "accepted", f"rejected{rule}: {answer.rejected}", rules=rules),
            )
        if not fs.expect:
            continue
        if answer.observation is None:
            return finish("errored", f"{where}: no observation returned")
        expected = comparable(fs.expect, description)
        found = first_divergence(expected, answer.observation)
        if check_shape and (found is not None or not shape_checked):
            shape_checked = True
            problem = first_error(answer.observation, "adapter-messages", "observation")
            if problem is not None:
                return finish(
                    "errored",
                    f"{where}: the observation does not fit the protocol schema "
                    f"(spec/adapter-messages.schema.json, observation): {problem}",
                    detail="observation: " + json.dumps(answer.observation)[:2000],
                    steps_run=fs.number,
                )
        if found is not None:
            divergence = _divergence(fs, found.path, found.expected, _show(found.actual), rules=rules)
            divergence["differences"] = [
                {"field": d.path, "expected": d.expected, "actual": _show(d.actual)}
                for d in all_divergences(expected, answer.observation)
            ]
            divergence |= step_states(fixture, fs.index, answer.observation)
            return finish(
                "failed",
                f"{where}: {found.path}: expected {found.expected!r}, got {_show(found.actual)!r}",
                divergence=divergence,
            )
    return finish("passed")


def _fault(exc: Exception) -> tuple[str, str]:
    """Reason and diagnostics for an implementation that failed to answer: an
    ``AdapterError`` carries its own; anything else an in-process implementation raised
    is reported with its traceback."""
    if isinstance(exc, AdapterError):
        return exc.message, exc.detail
    return f"the implementation raised {type(exc).__name__}: {exc}", traceback.format_exc()


def _divergence(fs: FixtureStep, path: str, expected: Any, actual: Any, rules: list[str]) -> dict[str, Any]:
    """Where a run diverged: ``step`` counts from 1; ``rules`` are what the reference fired there."""
    return {
        "step": fs.number,
        "kind": fs.step.kind,
        "line": fs.line,
        "field": path,
        "expected": expected,
        "actual": actual,
        "why": fs.why or "",
        "rules": rules,
    }


ProgressFn = Callable[[str, Fixture, FixtureResult], None]


def run_fixtures(
    adapter: Adapter,
    impl_id: str,
    fixtures: Iterable[Fixture],
    traces: dict[str, RuleTrace] | None = None,
    progress: ProgressFn | None = None,
) -> tuple[Description | None, list[FixtureResult]]:
    """Run every fixture on one adapter. If ``describe`` fails, every fixture is errored
    (``results.run_suite`` checks that every implementation starts before running any)."""
    fixtures = list(fixtures)
    try:
        description = adapter.describe()
    except Exception as exc:
        message, detail = _fault(exc)
        results = [
            FixtureResult(impl_id, f.id, "errored", reason=f"describe: {message}", detail=detail) for f in fixtures
        ]
        return None, results
    results = []
    for fixture in fixtures:
        trace = traces[fixture.id] if traces is not None and fixture.id in traces else reference_trace(fixture)
        result = run_fixture(adapter, description, fixture, impl_id, trace)
        result.rules = reference_rules(fixture, trace)
        if result.outcome == "errored":
            try:
                adapter.restart()
            except Exception as exc:
                result.detail = (result.detail + f"\nrestart failed: {_fault(exc)[0]}").strip()
        results.append(result)
        if progress is not None:
            progress(impl_id, fixture, result)
    return description, results
