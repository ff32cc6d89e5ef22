"""The fixture runner: replay fixtures against an implementation, one outcome each.

Every fixture selected lands in exactly one outcome:

- ``passed``: every stated (and exposed) field matched after every step;
- ``failed``: the first divergence (step number, step kind, field path, expected, actual,
  and the spec rules the reference fired at that step), or a step accepted that should have
  been rejected, or the reverse;
- ``errored``: the implementation could not answer (crash, hang, invalid message, an
  observation that does not fit the protocol schema, refused config), with the reason and
  diagnostics;
- ``skipped``: the implementation lacks the generation, a step kind, every field the
  fixture checks, or (for a fixture with ``initial:``) the ``initial_state`` capability;
  the reason says which.

Steps are numbered from 1 in every record and report ("step 3" is the third entry of the
fixture's ``steps``). Each step is sent complete (``wire.py``: defaults spelled out, the
automatic produce id). The first observation of each fixture, and any observation that
differs from what the fixture expects, is checked against the protocol schema first, so
a malformed reply errors the fixture instead of failing it with a confusing diff.

The runner emits plain records (``FixtureResult.to_dict``); reports are built from them.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from reference_impl import StepRejected
from reference_impl import apply as reference_apply

from ..adapters.base import Adapter, Description
from ..adapters.limits import config_reason, run_reason
from ..adapters.wire import wire_step
from ..fixtures.loading import Fixture
from .coarsen import Plan, plan, start_state
from .compare import MISSING
from .conventions import ConventionError, unsupported_step_field
from .deciding import held
from .expectations import is_known
from .faults import fault
from .judge import CannotAnswer, judge
from .levels import coverage_record
from .safety import Coverage, SafetyMonitor
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
    malformed: bool = False
    """Errored because the implementation answered outside the protocol (an observation the
    schema refuses, or none for an accepted step: ``judge.CannotAnswer``), not because it
    could not answer: ``kconform sensitivity`` counts such a case as a kill."""
    rules: list[str] = field(default_factory=list)
    """Spec rules the reference fires on this fixture (what passing it exercises)."""
    expected: str = "pass"
    """``pass``, or ``fail`` when an expectations file marks it (then XFAIL / XPASS)."""
    expected_reason: str = ""
    level: str = "exact"
    """The level this outcome is judged at (``levels.LEVELS``)."""
    levels: dict[str, str | None] = field(default_factory=dict)
    """The verdict at every level: ``passed`` / ``failed`` / None (not judged)."""
    failures: list[dict[str, Any]] = field(default_factory=list)
    """Every divergence and safety finding, not only the first (``judge.py``)."""
    checked: int = 0
    """n: the fixture's expectations checked on this implementation (after lowering)."""
    expectations: int = 0
    """m: the fixture's expectations."""
    notes: list[str] = field(default_factory=list)
    """How the fixture was lowered for this implementation (``coarsen.py``)."""
    stopped: str = ""
    """Why the run ended before the fixture's end, if it did."""
    progress: dict[str, Any] | None = None
    """With ``progress``: the fair suffix's rounds, bound, steps and unchecked properties."""
    safety: dict[str, dict[str, Any]] = field(default_factory=dict)
    """Per safety property: ``checked`` (how often it was evaluated on data), ``missing``
    (the fields it needs that the implementation does not report), ``applicable``."""

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
            "level": self.level,
            "levels": self.levels,
            "failures": self.failures,
            "checked": self.checked,
            "expectations": self.expectations,
            "notes": self.notes,
            "stopped": self.stopped,
            **({"malformed": True} if self.malformed else {}),
            **({"progress": self.progress} if self.progress is not None else {}),
            **({"safety": self.safety} if self.safety else {}),
        }


def _show(value: Any) -> Any:
    return "(not reported)" if value is MISSING else value


def comparable(expect: dict[str, Any], description: Description) -> dict[str, Any]:
    """The part of an expectation this implementation reports (its capabilities)."""
    if _all_reported(expect, description):
        return expect  # the common case (every field reported): nothing to cut, nothing copied
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


def _comparable(description: Description) -> Callable[[dict[str, Any]], dict[str, Any]]:
    """``comparable`` for one run: a corpus trace's expectations share their replicas
    mapping from step to step (copied on write), so one found wholly reported is not
    walked again."""
    fields = description.field_set
    reported: list[Any] = [None]

    def cut(expect: dict[str, Any]) -> dict[str, Any]:
        replicas = expect.get("replicas")
        if replicas is not None and replicas is reported[0] and expect.keys() <= fields:
            return expect
        if _all_reported(expect, description):
            reported[0] = replicas
            return expect
        return comparable(expect, description)

    return cut


def _all_reported(expect: dict[str, Any], description: Description) -> bool:
    fields = description.field_set
    if not expect.keys() <= fields:
        return False
    replicas = expect.get("replicas")
    if replicas is None:
        return True
    wanted = description.replica_field_set
    return isinstance(replicas, dict) and all(
        isinstance(r, dict) and r and r.keys() <= wanted for r in replicas.values()
    )


def skip_reason(fixture: Fixture, description: Description) -> str | None:
    """Why this implementation cannot run this fixture at all, or None. Missing step kinds
    are lowered (``coarsen.py``) rather than skipped; a fixture is skipped for them only
    when nothing is left (``_nothing_left``)."""
    if fixture.generation.value not in description.generations:
        return f"generation {fixture.generation.value} not supported (supports: {', '.join(description.generations)})"
    if fixture.initial is not None and not description.initial_state:
        return "starts from a given state (initial:), which the implementation cannot (capability initial_state)"
    for fs in fixture.steps:
        name = unsupported_step_field(fs.step, description)
        if name is not None:
            return f"step {fs.number} ({fs.step.kind}) uses {name}, which the implementation does not honour"
    if description.limits:
        return config_reason(fixture.config, description.limits)
    return None


RuleTrace = list[tuple[str, ...]]
"""The spec rules the reference fires at each step of a fixture, in step order."""


def reference_trace(fixture: Fixture) -> RuleTrace:
    """Per step, the rules the reference fires (for a rejected step: its guard's rule)."""
    state = start_state(fixture)
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
    level: str = "exact",
    known: Mapping[str, str] | None = None,
    progress: bool = False,
) -> FixtureResult:
    """Run one fixture on one implementation; never raises for implementation faults.

    The run is judged at every level at once (``judge.py``: coarsening, conventions, keep
    going, safety, settled); the outcome is the verdict at ``level``. ``trace`` (from
    ``reference_trace``) names the rules fired at each divergent step. ``known``: known
    differences (``expectations.is_known``): such failures are kept in the record, marked
    ``known`` with the reason, and decide nothing.
    """
    started = time.perf_counter()
    result = FixtureResult(implementation=impl_id, fixture=fixture.id, outcome="passed", level=level)

    def finish(outcome: str, reason: str = "", **extra: Any) -> FixtureResult:
        result.outcome = outcome
        result.reason = reason
        for key, value in extra.items():
            setattr(result, key, value)
        result.duration_ms = (time.perf_counter() - started) * 1000
        return result

    reason = skip_reason(fixture, description)
    if reason is None and description.limits:
        rules = trace if trace is not None else reference_trace(fixture)
        reason = run_reason((fs.step.kind for fs in fixture.steps), rules, description.limits)
    if reason:
        return finish("skipped", reason)
    try:
        lowered = plan(fixture, frozenset(description.steps))
    except Exception as exc:  # the reference cannot run the fixture: a fixture problem
        return finish("errored", f"cannot lower the fixture for this implementation: {exc}")
    result.expectations, result.checked, result.notes = lowered.expectations, lowered.checked, lowered.notes
    reason = _nothing_left(lowered, description, level)
    if reason:
        return finish("skipped", reason)
    start_at = getattr(adapter, "start_at", None)
    try:
        if start_at is not None and lowered.initial is not None and start_at(lowered.initial):
            pass  # the reference in process: it starts at the state the plan built
        elif fixture.initial is None:
            adapter.reset(fixture.config.to_dict())
        else:
            adapter.reset(fixture.config.to_dict(), fixture.initial)
    except Exception as exc:  # an implementation's fault must not end the run
        message, detail = fault(exc)
        return finish("errored", f"reset: {message}", detail=detail)
    try:
        verdict = judge(
            adapter,
            description,
            fixture,
            lowered,
            _comparable(description),
            trace,
            safety_only=level == "safety",
            check_shape=not getattr(adapter, "trusted", False),
            progress=progress,
        )
    except CannotAnswer as exc:
        return finish("errored", exc.reason, detail=exc.detail, steps_run=exc.steps_run, malformed=exc.malformed)
    except ConventionError as exc:
        return finish("errored", f"describe: {exc}")
    for failure in verdict.failures if known else ():
        reason = is_known(failure, known or {})
        if reason is not None:
            failure["known"] = reason
    result.failures, result.stopped, result.steps_run = verdict.failures, verdict.stopped, verdict.steps_run
    result.progress = verdict.progress
    result.safety = coverage_record(verdict.coverage)
    if not getattr(adapter, "trusted", False) and any(
        c.applicable and not c.checked and not c.missing for c in verdict.coverage.values()
    ):
        for pid, c in reference_coverage_of(fixture, lowered, description).items():
            if pid in result.safety:
                result.safety[pid]["exercised"] = c.checked
    result.notes = verdict.notes  # the lowering's, and the choices settled assumed (judge.py)
    result.levels = verdict.verdicts(safety_only=level == "safety")
    relevant = [f for f in verdict.failures if f["level"] in FAILING_AT[level] and "known" not in f]
    if not relevant:
        return finish("passed")
    at_first = [f for f in relevant if f["step"] == relevant[0]["step"]]
    at_first.sort(key=lambda f: f["level"] == "safety")  # the reference's view first, then safety
    first = at_first[0]
    divergence = {k: first[k] for k in ("step", "kind", "line", "field", "expected", "actual", "why", "rules")}
    divergence["level"] = first["level"]
    divergence |= step_states(fixture, first["step"] - 1, verdict.observed.get(first["step"]))
    divergence["differences"] = differences(at_first)
    fields = [f"safety {f['field']}" if f["level"] == "safety" else f["field"] for f in at_first]
    divergence["held"] = held(fields, first.get("rules") or (), divergence["expected_state"])
    where = f"step {first['step']} ({first['kind']}) at {fixture.path}:{first['line']}"
    more = len(relevant) - 1
    tail = f" (+{more} more)" if more else ""
    safety = sorted({f["field"] for f in at_first if f["level"] == "safety"})
    if safety and first["level"] != "safety":
        tail += f"; safety: {', '.join(safety)} violated"
    if first["level"] == "safety":
        text = f"{where}: safety property {first['field']} violated: {first['actual']}{tail}"
    elif first["field"] == "(step)":
        text = f"{where}: expected {first['expected']}, the implementation {first['actual']}{tail}"
    else:
        text = f"{where}: {first['field']}: expected {first['expected']!r}, got {first['actual']!r}{tail}"
    return finish("failed", text, divergence=divergence)


_COVERAGE: dict[tuple[int, frozenset[str]], tuple[Fixture, dict[str, Coverage]]] = {}
"""``reference_coverage`` by fixture (the object, held so its id stays its own) and step
kinds: a fixture's plan, and so the reference's run, depends on nothing else. ``kconform
sensitivity`` judges one fixture on every zoo member (58 describe the same steps), and
this was a quarter of its time once members were judged as any implementation."""
_COVERAGE_KEPT = 4096


def reference_coverage_of(fixture: Fixture, lowered: Plan, description: Description) -> dict[str, Coverage]:
    """``reference_coverage``, computed once per fixture object and step kinds (``lowered``
    is ``coarsen.plan(fixture, description.steps)``, a function of those two)."""
    key = (id(fixture), frozenset(description.steps))
    known = _COVERAGE.get(key)
    if known is not None and known[0] is fixture:
        return known[1]
    if len(_COVERAGE) >= _COVERAGE_KEPT:
        _COVERAGE.clear()
    coverage = reference_coverage(fixture, lowered, description)
    _COVERAGE[key] = (fixture, coverage)
    return coverage


def reference_coverage(fixture: Fixture, lowered: Plan, description: Description) -> dict[str, Coverage]:
    """How often the reference, on the same run, evaluates each safety property: whether
    the run exercises a property at all (``safety.certificate``'s ``exercised``). Computed
    only for a run where the implementation left a property unchecked: from the fixture's
    own expectations where every step states the whole observation (corpus traces, fuzz and
    explore runs: no reference is run), else from the reference's lowered run."""
    monitor = SafetyMonitor(fixture.config, steps=frozenset(description.steps), counting=True)
    if all(fs.expect_rejected is not None or (fs.expect and "in_flight" in fs.expect) for fs in fixture.steps):
        produced = 0
        for fs in fixture.steps:
            do = wire_step(fs.step, produced)
            if fs.expect_rejected is not None or fs.expect is None:
                monitor.refused(do)
                continue
            produced += fs.step.kind == "produce"
            monitor.observe(do, fs.expect)
        return monitor.coverage()
    produced = 0
    for ps in lowered.steps:
        if ps.internal:
            continue
        do = wire_step(ps.step, produced)
        if ps.rejected is not None or ps.observation is None:
            monitor.refused(do)
            continue
        if do["kind"] == "produce":
            produced += 1
        monitor.observe(do, ps.observation)
    return monitor.coverage()


def differences(failures: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One row per differing field (or safety property) at a step, with every level it fails
    at (``exact`` and ``settled`` for an outcome field, ``safety`` for a property)."""
    rows: dict[str, dict[str, Any]] = {}
    for f in failures:
        key = f"safety {f['field']}" if f["level"] == "safety" else f["field"]
        level = "exact" if f["level"] == "stop" else f["level"]
        row = rows.setdefault(key, {"field": key, "expected": f["expected"], "actual": f["actual"], "levels": []})
        if level not in row["levels"]:
            row["levels"].append(level)
        if f["level"] == "stop" and "settled" not in row["levels"]:
            row["levels"].append("settled")
    return list(rows.values())


FAILING_AT = {
    "exact": ("exact", "settled", "safety", "stop"),
    "settled": ("settled", "safety", "stop"),
    "safety": ("safety",),
}
"""Which failures fail a fixture at each level (every level includes safety)."""


def _nothing_left(lowered: Plan, description: Description, level: str) -> str | None:
    """Why nothing of the fixture can be checked on this implementation, or None."""
    if not lowered.steps:
        return f"nothing left to run: {lowered.stopped}" if lowered.stopped else "nothing to run: no steps"
    if level == "safety":
        return None
    kept = [c for s in lowered.steps for c in s.checks]
    if not kept:
        return f"none of its {lowered.expectations} expectations survive lowering ({lowered.stopped or 'see notes'})"
    if not any(c.expect_rejected or c.logs_match or comparable(c.expect or {}, description) for c in kept):
        return "reports none of the fields this fixture checks"
    return None


ProgressFn = Callable[[str, Fixture, FixtureResult], None]


def run_fixtures(
    adapter: Adapter,
    impl_id: str,
    fixtures: Iterable[Fixture],
    traces: dict[str, RuleTrace] | None = None,
    progress: ProgressFn | None = None,
    level: str = "exact",
    known: Mapping[str, str] | None = None,
    fair_suffix: bool = False,
) -> tuple[Description | None, list[FixtureResult]]:
    """Run every fixture on one adapter. If ``describe`` fails, every fixture is errored
    (``results.run_suite`` checks that every implementation starts before running any)."""
    fixtures = list(fixtures)
    try:
        description = adapter.describe()
    except Exception as exc:
        message, detail = fault(exc)
        results = [
            FixtureResult(impl_id, f.id, "errored", reason=f"describe: {message}", detail=detail) for f in fixtures
        ]
        return None, results
    results = []
    for fixture in fixtures:
        trace = traces[fixture.id] if traces is not None and fixture.id in traces else reference_trace(fixture)
        result = run_fixture(adapter, description, fixture, impl_id, trace, level, known, fair_suffix)
        result.rules = reference_rules(fixture, trace)
        if result.outcome == "errored":
            try:
                adapter.restart()
            except Exception as exc:
                result.detail = (result.detail + f"\nrestart failed: {fault(exc)[0]}").strip()
        results.append(result)
        if progress is not None:
            progress(impl_id, fixture, result)
    return description, results
