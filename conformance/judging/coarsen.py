"""Coarsening: run a fixture on an implementation that lacks some of its step kinds.

Instead of skipping the whole fixture, the steps are lowered to ones the implementation
has (spec/adapter-protocol.md, "Coarsening"):

- ``fetch R`` ... ``deliver_fetch R`` -> one ``fetch_round R`` at the fetch (the delivery is
  absorbed when the round answered at once);
- ``epoch_request R`` ... ``deliver_epoch R`` -> one ``epoch_round R``;
- ``fetch_round R`` -> ``fetch R`` (+ ``deliver_fetch R`` when answered at once), and
  ``epoch_round R`` -> ``epoch_request R`` + ``deliver_epoch R``, for split-only ones;
- a ``deliver_fetch`` / ``deliver_epoch`` whose answer is in flight, for an implementation
  with rounds only: the implementation receives it by itself (an *internal* step: not sent,
  the reference applies it);
- a ``consume`` (it only reads) is left out;
- any other missing kind ends the run there: the fixture runs up to it.

The lowered run is checked on the reference first. An expectation is kept only at a point
where the lowered run has applied exactly the fixture's steps up to it (the ones that "fell
between" a fetch and its absorbed delivery are skipped), and only the fields on which the
reference's lowered run still agrees with the fixture: a lowered fixture never asks an
implementation for something the reference itself would not do. The plan says how many of
the fixture's expectations survive ("n of m expectations checked").
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from reference_impl import Config, State, Step, StepRejected, apply, initial_state, observe
from reference_impl.steps import (
    DELIVERIES,
    ROUNDS,
    DeliverEpoch,
    DeliverFetch,
    EpochRequest,
    EpochRound,
    Fetch,
    FetchRound,
)

from ..fixtures.loading import Fixture
from .compare import logs_mismatch

DROPPABLE = ("consume",)
_FLIGHT = {delivery: DELIVERIES[delivery] for _, delivery in ROUNDS.values()}
"""Step kinds that change nothing but what they report: left out when unsupported."""


@dataclass(frozen=True)
class Check:
    """An expectation of the fixture, checked after a plan step."""

    index: int
    """The fixture step it belongs to (0-based)."""
    expect: dict[str, Any] | None
    expect_rejected: str | None = None
    logs_match: tuple[str, ...] = ()
    """Replicas whose logs must be equal (``compare.logs_mismatch``)."""


class PlanStep:
    """One step of the lowered run, with the reference's state and observation after it.

    In a plan that runs the fixture as written (``_identity``) those two are computed only
    when asked (``_Chain``): a run whose every answer matches the fixture's expectations
    never needs the reference's own states, so a corpus replay does not run the reference
    a second time beside the implementation."""

    __slots__ = ("_chain", "_observation", "_position", "_state", "checks", "covers", "internal", "rejected", "step")

    def __init__(
        self,
        step: Step,
        covers: tuple[int, ...],
        observation: dict[str, Any] | None,
        state: State | None,
        rejected: str | None = None,
        checks: list[Check] | None = None,
        internal: bool = False,
        chain: _Chain | None = None,
        position: int = 0,
    ) -> None:
        self.step = step
        self.covers = covers
        """The fixture steps (0-based) this step stands for."""
        self._observation = observation
        self._state = state
        self.rejected = rejected
        self.checks: list[Check] = checks if checks is not None else []
        self.internal = internal
        """Not sent: the implementation does this by itself (a round-only implementation
        receives the answer to a parked fetch when it completes). Checks after it read the
        last observation."""
        self._chain, self._position = chain, position

    @property
    def state(self) -> State:
        """The reference's state after this step (before it, when the reference rejects it)."""
        if self._chain is not None:
            return self._chain.state(self._position)
        assert self._state is not None
        return self._state

    @property
    def observation(self) -> dict[str, Any] | None:
        """The reference's observation after it (None: the reference rejects it)."""
        if self._chain is not None:
            return self._chain.observation(self._position)
        return self._observation

    def quiescent(self) -> bool:
        """No answer or LeaderAndIsr in flight in the reference after this step (a step the
        reference rejects counts as quiescent, as an observation it does not have)."""
        if self._chain is not None:
            return self._chain.quiescent(self._position)
        flight = (self._observation or {}).get("in_flight") or {}
        return not any(flight.get(k) for k in ("fetch_responses", "epoch_responses", "leader_and_isr"))


class _Chain:
    """The reference's run of a fixture's steps as written, computed up to the position asked."""

    def __init__(self, start: State, steps: list[Step]) -> None:
        self._start, self._steps = start, steps
        self._states: list[State] = []
        self._accepted: list[bool] = []
        self._observations: dict[int, dict[str, Any] | None] = {}

    def state(self, n: int) -> State:
        while len(self._states) <= n:
            before = self._states[-1] if self._states else self._start
            try:
                self._states.append(apply(before, self._steps[len(self._states)]))
                self._accepted.append(True)
            except StepRejected:
                self._states.append(before)
                self._accepted.append(False)
        return self._states[n]

    def quiescent(self, n: int) -> bool:
        state = self.state(n)
        if not self._accepted[n]:
            return True
        return not (state.fetch_responses or state.epoch_responses or state.leader_and_isr)

    def observation(self, n: int) -> dict[str, Any] | None:
        if n not in self._observations:
            state = self.state(n)
            self._observations[n] = observe(state) if self._accepted[n] else None
        return self._observations[n]


@dataclass
class Plan:
    steps: list[PlanStep]
    expectations: int
    """m: the fixture steps with an expectation (fields or a rejection)."""
    notes: list[str] = field(default_factory=list)
    """What was lowered or left out, for the report."""
    stopped: str = ""
    """Why the run ends before the fixture does ("" when it runs to the end)."""
    initial: State | None = None

    @property
    def checked(self) -> int:
        """n: the expectations that survive lowering."""
        return sum(1 for s in self.steps for c in s.checks if c.expect or c.expect_rejected or c.logs_match)

    @property
    def lowered(self) -> bool:
        return bool(self.notes or self.stopped)


def _expectations(fixture: Fixture) -> int:
    return sum(1 for fs in fixture.steps if fs.expect or fs.expect_rejected or fs.logs_match)


def prune(expect: Any, actual: Any) -> Any:
    """The part of ``expect`` that ``actual`` agrees with (None when nothing is left)."""
    if isinstance(expect, Mapping):
        if not isinstance(actual, Mapping):
            return None
        out = {}
        for key, value in expect.items():
            if key in actual:
                kept = prune(value, actual[key])
                if kept is not None:
                    out[key] = kept
        return out or None
    return expect if expect == actual and type(expect) is type(actual) else None


def _response_to(observation: dict[str, Any], replica: str, kind: str) -> bool:
    lines = (observation.get("in_flight") or {}).get(kind) or []
    return any(str(line).split(" ", 1)[0].endswith(f"->{replica}") for line in lines)


_START: list[tuple[Config, dict[str, Any] | None, State]] = []
"""The start state built last (at most one): a corpus trace's is built when its line is
checked (``corpus.format.record_to_trace``), and the plan, the rules and the reference
adapter's reset (``runner.run_fixture``) then take it instead of building it again."""


def remember_start(config: Config, initial: dict[str, Any] | None, state: State) -> None:
    """``state`` is the start of every fixture with this very ``config`` and ``initial``
    (the objects, not equal ones: they are held, so their identities stay theirs)."""
    _START[:] = [(config, initial, state)]


def start_state(fixture: Fixture) -> State:
    """``fixture.start()``, built once for the fixture's config and ``initial`` objects
    (states are immutable values, so one may serve every use)."""
    for config, initial, state in _START:
        if config is fixture.config and initial is fixture.initial:
            return state
    state = initial_state(fixture.config, fixture.initial)
    remember_start(fixture.config, fixture.initial, state)
    return state


def plan(fixture: Fixture, kinds: set[str] | frozenset[str]) -> Plan:
    """The run of ``fixture`` on an implementation that performs the step ``kinds``."""
    total = _expectations(fixture)
    start = start_state(fixture)
    if {fs.step.kind for fs in fixture.steps} <= set(kinds):
        return _identity(fixture, start, total)
    steps: list[PlanStep] = []
    notes: list[str] = []
    covered: set[int] = set()
    absorbed: dict[int, int] = {}
    state = start
    stopped = ""

    def emit(step: Step, covers: tuple[int, ...], internal: bool = False) -> bool:
        nonlocal state
        try:
            state = apply(state, step)
        except StepRejected as exc:
            steps.append(PlanStep(step, covers, None, state, rejected=exc.reason, internal=internal))
            return False
        steps.append(PlanStep(step, covers, observe(state), state, internal=internal))
        return True

    for fs in fixture.steps:
        i, step, kind = fs.index, fs.step, fs.step.kind
        n_before = len(steps)
        if i in absorbed:
            covered.add(i)
            if steps:
                steps[-1].covers += (i,)
        elif kind in kinds:
            emit(step, (i,))
        elif kind == "fetch" and "fetch_round" in kinds:
            assert isinstance(step, Fetch)
            emit(FetchRound(step.replica, step.max_records, step.max_wait_ms), (i,))
            j = _next_delivery(fixture, i, "deliver_fetch", step.replica)
            obs = steps[-1].observation
            if j is not None and obs is not None and not _waiting(obs, step.replica):
                absorbed[j] = i
                notes.append(f"steps {i + 1}+{j + 1}: fetch + deliver_fetch -> fetch_round")
            else:
                notes.append(f"step {i + 1}: fetch -> fetch_round")
        elif kind == "epoch_request" and "epoch_round" in kinds:
            assert isinstance(step, EpochRequest)
            emit(EpochRound(step.replica), (i,))
            j = _next_delivery(fixture, i, "deliver_epoch", step.replica)
            if j is not None:
                absorbed[j] = i
                notes.append(f"steps {i + 1}+{j + 1}: epoch_request + deliver_epoch -> epoch_round")
        elif kind == "fetch_round" and {"fetch", "deliver_fetch"} <= set(kinds):
            assert isinstance(step, FetchRound)
            if emit(Fetch(step.replica, step.max_records, step.max_wait_ms), (i,)) and _response_to(
                steps[-1].observation or {}, step.replica, "fetch_responses"
            ):
                steps[-1].covers = ()
                emit(DeliverFetch(step.replica), (i,))
            notes.append(f"step {i + 1}: fetch_round -> fetch + deliver_fetch")
        elif kind == "epoch_round" and {"epoch_request", "deliver_epoch"} <= set(kinds):
            assert isinstance(step, EpochRound)
            if emit(EpochRequest(step.replica), (i,)):
                steps[-1].covers = ()
                emit(DeliverEpoch(step.replica), (i,))
            notes.append(f"step {i + 1}: epoch_round -> epoch_request + deliver_epoch")
        elif (
            kind in ("deliver_fetch", "deliver_epoch")
            and ("fetch_round" if kind == "deliver_fetch" else "epoch_round") in kinds
            and steps
            and _response_to(steps[-1].observation or {}, getattr(step, "replica", ""), _FLIGHT[kind])
        ):
            emit(step, (i,), internal=True)
            notes.append(f"step {i + 1}: {kind} done by the implementation itself (round-only)")
        elif kind in DROPPABLE:
            notes.append(f"step {i + 1}: {kind} left out")
        else:
            stopped = f"step {fs.number} ({kind}) is not supported and cannot be lowered: the run ends before it"
            break
        covered.add(i)
        if len(steps) > n_before:
            last = steps[-1]
            accepted_before = fs.expect_rejected is None
            if last.rejected is not None and accepted_before:
                steps.pop()
                stopped = (
                    f"step {fs.number} ({kind}): the lowered run is not possible here on the reference "
                    f"({last.rejected}): the run ends before it"
                )
                break
        if covered == set(range(i + 1)) and (fs.expect or fs.expect_rejected or fs.logs_match) and steps:
            last = steps[-1]
            if fs.expect_rejected is not None:
                if last.rejected is not None and last.covers == (i,):
                    last.checks.append(Check(i, None, fs.expect_rejected))
            elif last.observation is not None:
                kept = prune(fs.expect, last.observation) if fs.expect else None
                match = fs.logs_match if logs_mismatch(fs.logs_match, last.observation, "") is None else ()
                if kept or match:
                    last.checks.append(Check(i, kept, None, match))
    return Plan(steps, total, notes, stopped, start)


def _waiting(observation: dict[str, Any], replica: str) -> bool:
    """Whether the replica's fetch is still parked or its answer still in flight."""
    flight = observation.get("in_flight") or {}
    parked = any(str(line).startswith(f"{replica}->") for line in flight.get("parked_fetches") or [])
    return parked or _response_to(observation, replica, "fetch_responses")


def _next_delivery(fixture: Fixture, i: int, kind: str, replica: str) -> int | None:
    for fs in fixture.steps[i + 1 :]:
        if fs.step.kind == kind and getattr(fs.step, "replica", None) == replica:
            return fs.index
    return None


def _identity(fixture: Fixture, start: State, total: int) -> Plan:
    """Every step as written; the fixture's expectations as written (no pruning). The
    reference's states are computed only if the judge asks for them (``_Chain``)."""
    chain = _Chain(start, [fs.step for fs in fixture.steps])
    steps: list[PlanStep] = []
    for n, fs in enumerate(fixture.steps):
        ps = PlanStep(fs.step, (fs.index,), None, None, chain=chain, position=n)
        ps.rejected = fs.expect_rejected  # the fixture's own claim, as written
        if fs.expect or fs.expect_rejected or fs.logs_match:
            ps.checks.append(Check(fs.index, fs.expect, fs.expect_rejected, fs.logs_match))
        steps.append(ps)
    return Plan(steps, total, [], "", start)
