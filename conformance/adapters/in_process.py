"""In-process adapters: a Python implementation driven through the ``Adapter`` seam.

``ReferenceAdapter`` wraps ``reference_impl``; ``FunctionAdapter`` turns three plain
functions (initial state, apply, observe) into an adapter, which is all a Python
implementation needs to be checked (see docs/adapters.md). Both still speak plain data,
so they meet the runner exactly as a stdio implementation does.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import reference_impl
from reference_impl import (
    OBSERVATION_FIELDS,
    REPLICA_FIELDS,
    STEP_TYPES,
    ConfigError,
    Generation,
    InitialStateError,
    StepFormatError,
    StepRejected,
    config_from_dict,
    initial_state,
)
from reference_impl.observe import Observer

from .base import Adapter, AdapterError, Description, StepResult
from .wire import parsed_step

ALL_GENERATIONS = tuple(g.value for g in Generation)


class ReferenceAdapter(Adapter):
    """The reference implementation, optionally pinned to one generation."""

    trusted = True
    """The reference itself: its observations are not shape-checked. A subclass is another
    implementation (a zoo member, a user's variant) and is checked like any other unless
    it says otherwise (``__init_subclass__``)."""
    shares_observations = True
    """Its observations share unchanged parts with the ones before and are never changed
    afterwards (``reference_impl.observe.Observer``): the judge compares and monitors
    those parts by identity first (``Adapter.shares_observations``)."""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        """A subclass inherits neither promise: it may answer with observations the
        reference never makes (a high watermark of -1: a zoo member did, and went
        unchecked in process while the same member over stdio was checked), or edit the
        reference's observation in place, which the judge's identity shortcuts cannot
        see. A class keeps one by declaring it in its own body, and its subclasses inherit
        that (``zoo.base.Mutant`` declares ``shares_observations`` for every member)."""
        super().__init_subclass__(**kwargs)
        for promise in ("trusted", "shares_observations"):
            owner = next(c for c in cls.__mro__ if promise in c.__dict__)
            if owner is ReferenceAdapter:
                setattr(cls, promise, False)

    def __init__(self, generation: str | None = None, name: str | None = None) -> None:
        if generation is not None and generation not in ALL_GENERATIONS:
            raise ValueError(f"unknown generation {generation!r}")
        self.generation = generation
        self.name = name or ("reference" if generation is None else f"reference-{generation}")
        self._state: reference_impl.State | None = None
        self._observe = Observer()

    def describe(self) -> Description:
        return Description(
            name=self.name,
            version=reference_impl.__version__,
            language="python",
            generations=(self.generation,) if self.generation else ALL_GENERATIONS,
            steps=tuple(STEP_TYPES),
            fields=OBSERVATION_FIELDS,
            replica_fields=REPLICA_FIELDS,
            initial_state=True,
        )

    def reset(self, config: dict[str, Any], initial: dict[str, Any] | None = None) -> None:
        self._observe = Observer()  # what the last run's observations held can go
        try:
            self._state = initial_state(config_from_dict(config), initial)
        except ConfigError as exc:
            raise AdapterError(f"config rejected: {exc}") from None
        except InitialStateError as exc:
            raise AdapterError(f"initial state rejected: {exc}") from None

    def start_at(self, state: reference_impl.State) -> bool:
        """``reset`` to a start state the runner already built (``fixture.start()``: the
        same config and ``initial``, checked then); a state is an immutable value, so
        building it again from the wire form would only cost time. False (nothing done)
        when ``reset`` is not this class's own (a subclass's, such as a mutant's, may
        change the start; a wrapper set on the instance counts resets): the runner then
        calls ``reset``."""
        if getattr(self.reset, "__func__", None) is not ReferenceAdapter.reset:
            return False
        self._observe = Observer()
        self._state = state
        return True

    def step(self, step: dict[str, Any]) -> StepResult:
        if self._state is None:
            raise AdapterError("step before reset")
        try:
            parsed = parsed_step(step)
        except StepFormatError as exc:
            raise AdapterError(f"malformed step: {exc}") from None
        try:
            self._state = reference_impl.apply(self._state, parsed)
        except StepRejected as exc:
            return StepResult(rejected=exc.reason, rule=exc.rule)
        # JSON-typed data (lists, never tuples: tests/test_harness.py checks it equals its
        # own JSON round trip), so it goes to the runner as a wire adapter's would, without
        # the O(state) cost of encoding it every step; the parts that did not change are
        # the previous observation's (``Observer``), which the judge settles by identity.
        return StepResult(observation=self._observe(self._state), fired=self._state.fired)

    @property
    def state(self) -> reference_impl.State | None:
        return self._state

    @state.setter
    def state(self, value: reference_impl.State | None) -> None:
        """Put a state back (it is an immutable value): ``explore.replay`` rewinds an
        in-process implementation instead of replaying each path from a reset."""
        self._state = value


class FunctionAdapter(Adapter):
    """An adapter from three functions over your own state type.

    ``init(config: dict) -> S``, ``apply(state: S, step: dict) -> S`` and
    ``observe(state: S) -> dict``. ``apply`` signals a refused step by raising
    ``StepRefused`` (or any exception listed in ``refusals``). ``init_from(config: dict,
    initial: dict) -> S``, if given, starts from a given state (``initial:`` fixtures);
    the description then says ``initial_state=True``; without it, ``False`` whatever the
    given description says (a capability it could not honour would fail every given start).
    """

    def __init__(
        self,
        description: Description,
        init: Callable[[dict[str, Any]], Any],
        apply: Callable[[Any, dict[str, Any]], Any],
        observe: Callable[[Any], dict[str, Any]],
        refusals: tuple[type[BaseException], ...] = (),
        init_from: Callable[[dict[str, Any], dict[str, Any]], Any] | None = None,
    ) -> None:
        if description.initial_state != (init_from is not None):
            description = dataclasses.replace(description, initial_state=init_from is not None)
        self._description = description
        self._init, self._apply, self._observe = init, apply, observe
        self._init_from = init_from
        self._refusals: tuple[type[BaseException], ...] = (StepRefused, *refusals)
        self._state: Any = None

    def describe(self) -> Description:
        return self._description

    def reset(self, config: dict[str, Any], initial: dict[str, Any] | None = None) -> None:
        if initial is None:
            self._state = self._init(config)
        elif self._init_from is None:
            raise AdapterError("this implementation cannot start from a given state (no init_from)")
        else:
            self._state = self._init_from(config, initial)

    def step(self, step: dict[str, Any]) -> StepResult:
        try:
            self._state = self._apply(self._state, step)
        except self._refusals as exc:
            return StepResult(rejected=str(exc) or type(exc).__name__, rule=getattr(exc, "rule", None))
        return StepResult(observation=self._observe(self._state))


class StepRefused(Exception):
    """Raise from a ``FunctionAdapter``'s ``apply`` to refuse a step."""

    def __init__(self, reason: str, rule: str | None = None) -> None:
        super().__init__(reason)
        self.rule = rule
