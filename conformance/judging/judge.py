"""Judging one fixture on one implementation at every level at once, without stopping at
the first difference.

The fixture is first lowered to the steps the implementation has (``coarsen.plan``). Then
each step is sent; the answer's observation is normalised (``conventions``) and

- checked by the safety monitor (``safety``: every level includes it);
- compared with the fixture's kept expectations (``exact``): every differing step is
  recorded with the rules the reference fired there;
- at quiescent points, checked against the set of reference states the visible steps can
  reach (``settle``: the ``settled`` level).

An adapter that pipelines is sent steps ahead of the answers it has not given yet, where
no answer can change them (``ahead.py``): the same steps, judged the same way, without a
wake-up of each process per step.

The run stops only where states can no longer be compared: the implementation refused a
step the reference performs, or performed one the reference refuses, or could not answer;
the record says so. The caller turns the verdicts into the fixture's outcome at the level
it selected.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from reference_impl import Config, State, observe
from reference_impl.steps import SPLIT_KINDS

from ..adapters.base import Adapter, Description
from ..adapters.wire import wire_step
from ..fixtures.loading import Fixture, FixtureStep
from .ahead import Lookahead, pipelines
from .coarsen import Plan, PlanStep
from .collector import young_only
from .compare import MISSING, all_divergences, logs_mismatch, matches_since
from .conventions import ConventionError, Conventions, adjust_expected, normalise
from .faults import fault
from .levels import settled_part
from .observation_check import check_observation, check_shared_observation
from .progress import FairSuffix
from .safety import Coverage, Finding, SafetyMonitor
from .settle import INTERNAL_BOUND, Frontier


class CannotAnswer(Exception):
    """The implementation failed to answer (the fixture is errored).

    ``malformed``: it did answer, but outside the protocol (an accepted step without an
    observation, or an observation the schema refuses, such as a high watermark of -1):
    a defect of the implementation the judge saw, not a process that died or an adapter
    that raised."""

    def __init__(self, reason: str, detail: str = "", steps_run: int = 0, malformed: bool = False) -> None:
        super().__init__(reason)
        self.reason, self.detail, self.steps_run, self.malformed = reason, detail, steps_run, malformed


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
    progress: dict[str, Any] | None = None
    """The fair suffix's rounds, bound, steps and unchecked properties (``judge``'s ``progress``)."""
    coverage: dict[str, Coverage] = field(default_factory=dict)
    """Per safety property: how often it was checked in this run, or which fields it lacked."""
    observed: dict[int, dict[str, Any]] = field(default_factory=dict)
    """The implementation's observation (as sent) at each fixture step number with a failure."""

    def verdicts(self, safety_only: bool = False) -> dict[str, str | None]:
        levels = {f["level"] for f in self.failures if "known" not in f}
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


class Watch:
    """What every judging path does with each answer an implementation gives: the
    observation's shape checked against the protocol schema, its conventions undone
    (``conventions.normalise``), and the safety monitor fed. The fixture runner (``judge``)
    and the safety fuzzer on the implementation's own path (``own_path.py``) both use it,
    so an observation is treated the same whichever command judges it."""

    def __init__(
        self, description: Description, config: Config, check_shape: bool = True, shared: bool = False
    ) -> None:
        self.description = description
        self.replicas = config.replicas
        self.monitor = SafetyMonitor(
            config, description.field_set, description.replica_field_set, frozenset(description.steps), shared
        )
        self.check_shape = check_shape
        self._check = check_shared_observation if shared else check_observation
        """An observation's parts that did not change are the previous ones' objects, never
        changed (``shared``): the shape check walks only what changed."""
        self._promise = shared and check_shape
        self._accepted = 0
        """Observations accepted in this run (which of them the promise is checked on)."""
        self._kept: tuple[dict[str, Any], str, str] | None = None
        """The last observation whose promise is being checked: it, its encoding, its step."""
        try:
            self.plain = Conventions.of(description) == Conventions()
            """The implementation keeps the reference's conventions (``conventions.normalise``
            would return each observation as it is)."""
        except ConventionError:  # raised where it was before: at the first observation normalised
            self.plain = False

    def shape(self, raw: dict[str, Any]) -> str | None:
        """The first way ``raw`` does not fit the protocol's observation schema, or None:
        every observation, at every step (``observation_check``: compiled from the schema,
        no jsonschema on the hot path)."""
        if not self.check_shape:
            return None
        return self._check(raw)

    def normalise(self, raw: dict[str, Any]) -> dict[str, Any]:
        if self.plain:
            return raw  # the reference's conventions: nothing to undo (decided once, not per step)
        return normalise(raw, self.description, self.replicas)

    def accept(self, raw: dict[str, Any] | None, where: str | Callable[[], str], index: int) -> dict[str, Any]:
        """An accepted step's observation, checked and normalised; ``CannotAnswer`` (the run
        is errored) when there is none or it does not fit the schema. ``where`` names the
        step for the message (or makes that name: only a message needs it)."""
        if raw is not None and not self.check_shape:  # the reference's own: nothing to check
            return self.normalise(raw)
        if not isinstance(where, str):
            where = where()
        if raw is None:
            raise CannotAnswer(
                f"{where}: no observation: the step was accepted (no rejection) but the answer carried no "
                "'observation' (spec/adapter-protocol.md, step)",
                malformed=True,
            )
        problem = self.shape(raw)
        if problem is not None:
            raise CannotAnswer(
                f"{where}: the observation does not fit the protocol schema (spec/adapter-messages.schema.json, "
                f"observation): {problem}",
                "observation: " + json.dumps(raw)[:2000],
                index,
                malformed=True,
            )
        if self._promise:
            self._accepted += 1
            if self._kept is not None or promise_checked(self._accepted):
                self._keeps_promise(raw, where, index)
        return self.normalise(raw)

    def _keeps_promise(self, raw: dict[str, Any], where: str, index: int) -> None:
        """``CannotAnswer`` if the observation kept from an earlier step changed since it
        was returned; then keep this one, while the run's checks last. An adapter that
        says ``shares_observations`` is judged by identity: a part that is the very object
        of the previous observation is taken as unchanged. One that updates a single dict
        in place would have every such change taken as none (the reference with a bug
        hidden that way passed 194 of the bundled cases instead of 93), and it shows at
        once: its first observation is the second one, changed. Checked on the first two
        observations of a run and then at each power of two (``promise_checked``), so one
        that keeps the promise at first and breaks it later, once a map has grown, is
        caught too, at a cost that grows with the log of the run's length."""
        kept = self._kept
        if kept is not None:
            before, text, at = kept
            if _encoded(before) != text:
                raise CannotAnswer(
                    f"{where}: the adapter declares shares_observations (docs/adapters.md), but the observation "
                    f"it returned at {at} was changed after it was returned: return new objects for what a "
                    "step changes, or leave shares_observations False",
                    "that observation as returned: " + text[:2000],
                    index,
                )
            self._kept = None
        if promise_checked(self._accepted):
            self._kept = (raw, _encoded(raw), where)

    def safety(self, do: dict[str, Any], observation: dict[str, Any]) -> list[Finding]:
        return self.monitor.observe(do, observation)


PROMISE_CHECKED = 2
"""The first observations of each run on which an adapter's ``shares_observations``
promise is checked (``Watch._keeps_promise``: each encoded when returned and again at the
next one), unless the adapter is the trusted reference; later, at each power of two."""


def promise_checked(n: int) -> bool:
    """Whether the ``n``-th observation of a run (from 1) is kept to check the promise."""
    return n <= PROMISE_CHECKED or (n > 2 and n & (n - 1) == 0)


def _encoded(observation: dict[str, Any]) -> str:
    return json.dumps(observation, sort_keys=True, default=repr)


@young_only
def judge(
    adapter: Adapter,
    description: Description,
    fixture: Fixture,
    lowered: Plan,
    comparable: Any,
    trace: list[tuple[str, ...]] | None = None,
    safety_only: bool = False,
    check_shape: bool = True,
    progress: bool = False,
) -> Judgement:
    """Run ``fixture`` on ``adapter`` (already reset) and judge it. Raises ``CannotAnswer``.

    ``progress``: end the run with a fair suffix on the implementation's own path
    (``progress.FairSuffix``: no more faults, every live follower fetching in rounds) and
    check the PROGRESS-* properties on its observations, as safety findings (every level
    includes them); the steps are numbered on from the fixture's last."""
    result = Judgement(expectations=lowered.expectations, notes=list(lowered.notes), stopped=lowered.stopped)
    result.checked = lowered.checked
    shared = bool(getattr(adapter, "shares_observations", False))
    watch = Watch(description, fixture.config, check_shape, shared)
    if fixture.initial is not None and lowered.initial is not None:
        # a given start: the properties' history begins at it (a truncation at step 1 is a
        # change from it, e.g. KIP-101's cut to the HW), not at nothing
        watch.monitor.given(observe(lowered.initial))
    lacking = frozenset(k for k in SPLIT_KINDS if k not in description.steps)
    frontier = Frontier(lowered.initial, lacking) if lowered.initial is not None and not safety_only else None
    steps_by_index = {fs.index: fs for fs in fixture.steps}
    produced = 0
    ahead = Lookahead(adapter, lowered) if pipelines(adapter) else None
    """Steps sent before the answers to earlier ones are read (``ahead.py``)."""
    observation: dict[str, Any] | None = None
    last_check = max((n for n, ps in enumerate(lowered.steps) if ps.checks), default=-1)
    raw: dict[str, Any] | None = None
    noted = 0
    matched: tuple[dict[str, Any], dict[str, Any]] | None = None
    """The last expectation and observation found equal (shared observations only): the
    next comparison walks only what changed since on either side (``matches_since``)."""

    def note_observed() -> None:
        nonlocal noted
        for failure in result.failures[noted:]:
            # plain data (a shared observation's logs carry the reference's Log objects)
            result.observed.setdefault(failure["step"], json.loads(json.dumps(raw)) if shared and raw else raw or {})
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
            try:  # sending ahead is the implementation's exchange too: its faults are this step's
                do = ahead.take(n, produced) if ahead is not None else wire_step(ps.step, produced)
                answer = adapter.step(do)
            except Exception as exc:
                message, detail = fault(exc)
                raise CannotAnswer(
                    f"step {fs.number} ({fs.step.kind}) at {fixture.path}:{fs.line}: {message}", detail, fs.index
                ) from None
            if ahead is not None:
                ahead.answered(n)
            result.steps_run = fs.number
            raw = answer.observation
            if answer.rejected is None and do["kind"] == "produce":
                produced += 1
            if answer.rejected is not None or ps.rejected is not None:
                if answer.rejected is not None:
                    watch.monitor.refused(do)
                if safety_only:
                    if answer.rejected is None:
                        observation = watch.accept(answer.observation, partial(_at, fixture, fs), fs.number)
                        _safety(result, watch, do, observation, where)
                    continue
                if (answer.rejected is None) != (ps.rejected is None):
                    wanted = "accepted" if ps.rejected is None else f"rejected ({ps.rejected})"
                    rule = f" [{answer.rule}]" if answer.rule else ""
                    actual = "accepted" if answer.rejected is None else f"rejected{rule}: {answer.rejected}"
                    failure = {**where, "level": "stop", "field": "(step)", "expected": wanted, "actual": actual}
                    # settled: not a failure if a reference state the visible steps reach does the same
                    if frontier is None or not frontier.decide(ps.step, performed=answer.rejected is None):
                        result.failures.append(failure)
                        result.stopped = (
                            f"step {fs.number} ({fs.step.kind}): {actual} where the reference is {wanted}; "
                            "the states can no longer be compared, so the run ends here"
                        )
                        break
                    result.failures.append({**failure, "level": "exact", "note": _DETACHED})
                    if answer.rejected is None:
                        observation = watch.accept(answer.observation, partial(_at, fixture, fs), fs.number)
                        _safety(result, watch, do, observation, where)
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
            observation = watch.accept(answer.observation, partial(_at, fixture, fs), fs.number)
            _safety(result, watch, do, observation, where)
            if frontier is not None:
                frontier.step(ps.step, _state_of(ps))
        if safety_only or observation is None:
            continue
        for check in ps.checks:
            if not check.expect and not check.logs_match:
                continue
            cfs = steps_by_index[check.index]
            cwhere: dict[str, Any] | None = None  # where the check is, made only for a failure
            if check.logs_match and "log" in description.replica_fields:
                found = logs_mismatch(check.logs_match, observation, f"logs_match[{','.join(check.logs_match)}]")
                if found is not None:
                    failure = {
                        **(cwhere := cwhere or _check_where(where, cfs, check.index, trace)),
                        "level": "exact",
                        "field": found.path,
                        "expected": found.expected,
                    }
                    result.failures.append({**failure, "actual": _show(found.actual)})
            if not check.expect:
                continue
            if watch.plain and not description.role_fields:
                expected = comparable(check.expect)  # ``adjust_expected`` would return it as written
            else:
                roles = _roles(ps.observation) if description.role_fields else {}
                expected = comparable(adjust_expected(check.expect, description, observation, roles))
            if matched is not None and matches_since(expected, observation, matched[0], matched[1]):
                exact = []
            else:
                exact = all_divergences(expected, observation)
            if shared and not exact:
                matched = (expected, observation)
            for d in exact:
                result.failures.append(
                    {
                        **(cwhere := cwhere or _check_where(where, cfs, check.index, trace)),
                        "level": "exact",
                        "field": d.path,
                        "expected": d.expected,
                        "actual": _show(d.actual),
                    }
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
                            **(cwhere := cwhere or _check_where(where, cfs, check.index, trace)),
                            "level": "settled",
                            "field": d.path,
                            "expected": d.expected,
                            "actual": _show(d.actual),
                            "note": "no reference path with these visible steps (any resolution of the choice "
                            f"points, and up to {INTERNAL_BOUND} internal steps after each) reaches this",
                        }
                    )
    if progress and not result.stopped:
        _progress(adapter, description, fixture, watch, observation, result)
    note_observed()
    result.coverage = watch.monitor.coverage()
    if frontier is not None:  # the choice points settled had to resolve otherwise than Kafka (settle.py)
        result.notes.extend(f"settled assumed {choice}" for choice in frontier.assumed())
    return result


def _progress(
    adapter: Adapter,
    description: Description,
    fixture: Fixture,
    watch: Watch,
    observation: dict[str, Any] | None,
    result: Judgement,
) -> None:
    """The fair suffix and its verdict (``judge``'s ``progress``)."""
    suffix = FairSuffix.for_implementation(fixture.config, description)
    if not observation:  # every step refused (or none observed): nothing to start from
        result.progress = {"rounds": 0, "bound": suffix.bound, "steps": 0, "unchecked": {"*": ["no observation"]}}
        return
    number = len(fixture.steps)
    line = fixture.steps[-1].line if fixture.steps else fixture.line
    request = suffix.next_step(observation or {})
    while request is not None:
        number += 1
        where = {"step": number, "kind": f"{request['kind']} (progress)", "line": line, "why": "", "rules": []}
        text = f"progress step {number} ({request['kind']}) after {fixture.path}"
        try:
            answer = adapter.step(request)
        except Exception as exc:
            message, detail = fault(exc)
            raise CannotAnswer(f"{text}: {message}", detail, number) from None
        result.steps_run = number
        if answer.rejected is None:
            observation = watch.accept(answer.observation, text, number)
            _safety(result, watch, request, observation, where)
            request = suffix.next_step(observation)
        else:
            request = suffix.next_step(observation or {}, rejected=True)
    end = {"step": number, "kind": "(progress)", "line": line, "why": "", "rules": []}
    for finding in suffix.verdict():
        result.failures.append(
            {
                **end,
                "level": "safety",
                "field": finding.property,
                "property": finding.property,
                "expected": "holds",
                "actual": f"{finding.detail} (after {suffix.rounds} of {suffix.bound} fair rounds)",
            }
        )
    result.progress = {
        "rounds": suffix.rounds,
        "bound": suffix.bound,
        "steps": suffix.steps,
        "unchecked": {k: list(v) for k, v in suffix.unchecked().items()},
    }


def _check_where(
    where: dict[str, Any], cfs: FixtureStep, index: int, trace: list[tuple[str, ...]] | None
) -> dict[str, Any]:
    """A failure's location for the check of fixture step ``cfs`` made at the step ``where``."""
    out = {**where, "step": cfs.number, "kind": cfs.step.kind, "line": cfs.line, "why": cfs.why or ""}
    if trace is not None and index < len(trace):
        out["rules"] = list(trace[index])
    return out


def _at(fixture: Fixture, fs: FixtureStep) -> str:
    return f"step {fs.number} ({fs.step.kind}) at {fixture.path}:{fs.line}"


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
    result: Judgement, watch: Watch, do: dict[str, Any], observation: dict[str, Any], where: dict[str, Any]
) -> None:
    for finding in watch.safety(do, observation):
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


__all__ = ["CannotAnswer", "Judgement", "PlanStep", "Watch", "judge"]
