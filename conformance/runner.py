"""The fixture runner: replay fixtures against an implementation, one outcome each.

Every fixture selected lands in exactly one outcome:

- ``passed``: every stated (and exposed) field matched after every step;
- ``failed``: the first divergence (step index, field path, expected, actual), or a step
  accepted that should have been rejected, or the reverse;
- ``errored``: the implementation could not answer (crash, hang, invalid message,
  refused config), with the reason and diagnostics;
- ``skipped``: the implementation lacks the generation, a step kind, or every field the
  fixture checks; the reason says which.

The runner emits plain records (``FixtureResult.to_dict``); reports are built from them.
"""

from __future__ import annotations

import time
import traceback
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from reference_impl import apply as reference_apply
from reference_impl import initial_state

from .adapter import Adapter, AdapterError, Description
from .compare import MISSING, all_divergences, first_divergence
from .fixtures import Fixture
from .step_states import step_states

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


def reference_rules(fixture: Fixture) -> list[str]:
    """The spec rules the reference fires while running ``fixture`` (sorted)."""
    state = initial_state(fixture.config)
    fired: set[str] = set()
    for fs in fixture.steps:
        try:
            state = reference_apply(state, fs.step)
        except Exception as exc:  # a rejection: its guard is the rule exercised
            rule = getattr(exc, "rule", None)
            if rule:
                fired.add(rule)
            continue
        fired.update(state.fired)
    return sorted(fired)


def run_fixture(adapter: Adapter, description: Description, fixture: Fixture, impl_id: str) -> FixtureResult:
    """Run one fixture on one implementation; never raises for implementation faults."""
    started = time.perf_counter()
    result = FixtureResult(implementation=impl_id, fixture=fixture.id, outcome="passed")

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
    for fs in fixture.steps:
        where = f"step {fs.index} ({fs.step.kind}), {fixture.path}:{fs.line}"
        try:
            answer = adapter.step(fs.do)
        except Exception as exc:
            message, detail = _fault(exc)
            return finish("errored", f"{where}: {message}", detail=detail, steps_run=fs.index)
        result.steps_run = fs.index + 1
        if fs.expect_rejected:
            if answer.rejected is None:
                return finish(
                    "failed",
                    f"{where}: accepted a step that must be rejected ({fs.expect_rejected})",
                    divergence=_divergence(fs.index, fs.line, "(step)", f"rejected ({fs.expect_rejected})", "accepted")
                    | step_states(fixture, fs.index, answer.observation),
                )
            continue
        if answer.rejected is not None:
            rule = f" [{answer.rule}]" if answer.rule else ""
            return finish(
                "failed",
                f"{where}: rejected a step that must be accepted{rule}: {answer.rejected}",
                divergence=_divergence(fs.index, fs.line, "(step)", "accepted", f"rejected{rule}: {answer.rejected}"),
            )
        if not fs.expect:
            continue
        if answer.observation is None:
            return finish("errored", f"{where}: no observation returned")
        expected = comparable(fs.expect, description)
        found = first_divergence(expected, answer.observation)
        if found is not None:
            divergence = _divergence(fs.index, fs.line, found.path, found.expected, _show(found.actual), fs.why)
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


def _divergence(index: int, line: int, path: str, expected: Any, actual: Any, why: str | None = None) -> dict[str, Any]:
    return {"step": index, "line": line, "field": path, "expected": expected, "actual": actual, "why": why or ""}


ProgressFn = Callable[[str, Fixture, FixtureResult], None]


def run_fixtures(
    adapter: Adapter,
    impl_id: str,
    fixtures: Iterable[Fixture],
    rules_by_fixture: dict[str, list[str]] | None = None,
    progress: ProgressFn | None = None,
) -> tuple[Description | None, list[FixtureResult]]:
    """Run every fixture on one adapter. If ``describe`` fails, every fixture is errored."""
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
        result = run_fixture(adapter, description, fixture, impl_id)
        if rules_by_fixture is not None:
            result.rules = rules_by_fixture.get(fixture.id, [])
        if result.outcome == "errored":
            try:
                adapter.restart()
            except Exception as exc:
                result.detail = (result.detail + f"\nrestart failed: {_fault(exc)[0]}").strip()
        results.append(result)
        if progress is not None:
            progress(impl_id, fixture, result)
    return description, results
