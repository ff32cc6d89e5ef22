"""Example implementations of realistic shapes, to see how kconform judges them.

Real implementations are not the reference: they lack steps, number things differently, or
answer sooner. Each example here is a small wrapper over the reference's public API
(``initial_state``, ``apply``, ``observe``) that changes what crosses the seam the way such
an implementation would; the early answer borrows the settled level's own
``settle.answer_parked_now``, the epochs-from-1 shape the conventions' record shift. Three
are correct and must reach ``settled`` and ``safety`` (tests/test_judge.py); one,
``shape-hw-decrease``, is defective and must fail ``safety`` with the invariant named
(tests/test_fuzz_explore_cli.py; ``kconform run --impl shape-round-only --level settled``).
"""

from __future__ import annotations

import copy
from typing import Any

import reference_impl
from reference_impl import (
    OBSERVATION_FIELDS,
    REPLICA_FIELDS,
    STEP_TYPES,
    ConfigError,
    StepFormatError,
    StepRejected,
    config_from_dict,
    initial_state,
    observe,
    step_from_dict,
)
from reference_impl.steps import ROUNDS

from ..adapters.base import Adapter, AdapterError, Description, StepResult
from ..judging.conventions import _shift_record
from ..judging.settle import answer_parked_now

ALL_GENERATIONS = tuple(g.value for g in reference_impl.Generation)


class _Wrapper(Adapter):
    """The reference behind the seam, with hooks to change what goes in and comes out."""

    name = "shape"
    summary = ""
    steps: tuple[str, ...] = tuple(STEP_TYPES)
    fields: tuple[str, ...] = OBSERVATION_FIELDS
    replica_fields: tuple[str, ...] = REPLICA_FIELDS
    role_fields: dict[str, tuple[str, ...]] = {}  # noqa: RUF012 - read-only class data
    conventions: dict[str, Any] = {}  # noqa: RUF012 - read-only class data

    def __init__(self) -> None:
        self._state: reference_impl.State | None = None

    def describe(self) -> Description:
        return Description(
            name=self.name,
            version=reference_impl.__version__,
            language="python",
            generations=ALL_GENERATIONS,
            steps=self.steps,
            fields=self.fields,
            replica_fields=self.replica_fields,
            role_fields=dict(self.role_fields),
            conventions=dict(self.conventions),
            initial_state=True,
        )

    def config(self, config: dict[str, Any]) -> dict[str, Any]:
        return config

    def reset(self, config: dict[str, Any], initial: dict[str, Any] | None = None) -> None:
        try:
            self._state = initial_state(config_from_dict(self.config(dict(config))), initial)
        except ConfigError as exc:
            raise AdapterError(f"config rejected: {exc}") from None

    def _apply(self, step: dict[str, Any]) -> None:
        assert self._state is not None
        self._state = reference_impl.apply(self._state, step_from_dict(step))

    def after(self) -> None:
        """What the implementation does by itself after each step."""

    def render(self, obs: dict[str, Any]) -> dict[str, Any]:
        return obs

    def step(self, step: dict[str, Any]) -> StepResult:
        if self._state is None:
            raise AdapterError("step before reset")
        if step.get("kind") not in self.steps:
            raise AdapterError(f"unsupported step kind {step.get('kind')!r}")
        try:
            self._apply(step)
        except StepFormatError as exc:
            raise AdapterError(f"malformed step: {exc}") from None
        except StepRejected as exc:
            return StepResult(rejected=exc.reason, rule=exc.rule)
        self.after()
        obs = self.render(observe(self._state))
        obs = {k: v for k, v in obs.items() if k in self.fields}
        return StepResult(observation=obs)


class RoundOnly(_Wrapper):
    """Whole fetch rounds only, no consumer, no follower HW (a simulator's shape): correct."""

    name = "shape-round-only"
    steps = tuple(k for k in STEP_TYPES if k != "consume" and not any(k in parts for parts in ROUNDS.values()))
    fields = ("clock_ms", "leader", "leader_epoch", "isr", "replicas", "producer")
    replica_fields = ("online", "role", "leader", "leader_epoch", "leo", "hw", "log", "remote_leo", "log_start")
    role_fields = {  # noqa: RUF012
        "leader": ("online", "role", "leader", "leader_epoch", "leo", "hw", "log", "remote_leo", "log_start"),
        "follower": ("online", "role", "leader", "leader_epoch", "leo", "log", "log_start"),
        "none": ("online", "role", "leader", "leader_epoch", "leo", "log", "log_start"),
    }
    conventions = {"unknown_remote_leo": "absent"}  # noqa: RUF012

    def after(self) -> None:
        """An answer is received as soon as it exists: a round ends when its answer arrives."""
        assert self._state is not None
        for _ in range(8):
            obs = observe(self._state)
            pending = [line.split(" ", 1)[0].split("->")[1] for line in obs["in_flight"]["fetch_responses"]]
            if not pending:
                return
            try:
                self._state = reference_impl.apply(
                    self._state, step_from_dict({"kind": "deliver_fetch", "replica": pending[0]})
                )
            except StepRejected:
                return

    def render(self, obs: dict[str, Any]) -> dict[str, Any]:
        obs = copy.deepcopy(obs)
        for rep in obs["replicas"].values():
            if rep["role"] != "leader":
                rep.pop("hw")  # no follower HW in this implementation
            remote = rep.get("remote_leo")
            if remote is not None:
                rep["remote_leo"] = {k: v for k, v in remote.items() if v is not None}
        return obs


class EpochsFromOne(_Wrapper):
    """Leader epochs numbered from 1 instead of Kafka's 0: correct."""

    name = "shape-epochs-from-1"
    fields = tuple(f for f in OBSERVATION_FIELDS if f not in ("in_flight", "answers"))
    conventions = {"epoch_base": 1}  # noqa: RUF012

    def render(self, obs: dict[str, Any]) -> dict[str, Any]:
        obs = copy.deepcopy(obs)
        obs["leader_epoch"] += 1
        for rep in obs["replicas"].values():
            rep["leader_epoch"] += 1
            rep["log"] = [_shift_record(r, 1) for r in rep["log"]]
            rep["epoch_cache"] = [[e + 1, o] for e, o in rep["epoch_cache"]]
        if obs.get("consumer"):
            obs["consumer"]["records"] = [_shift_record(r, 1) for r in obs["consumer"]["records"]]
        return obs


class EarlyAnswer(_Wrapper):
    """Answers a fetch with nothing to read at once (empty, with the HW of that moment)
    instead of parking it: correct, as ``replica.fetch.wait.max.ms`` only bounds how long a
    fetch may wait (FETCH-PARK-1, -3). Built on the reference's own completion of a parked
    fetch (``settle.answer_parked_now``)."""

    name = "shape-early-answer"
    fields = tuple(f for f in OBSERVATION_FIELDS if f not in ("in_flight", "answers"))

    def _apply(self, step: dict[str, Any]) -> None:
        super()._apply(step)
        assert self._state is not None
        if step.get("kind") in ("fetch", "fetch_round"):
            replica = step["replica"]
            answered = answer_parked_now(self._state, replica)
            if answered:
                self._state = answered[0]
                if step["kind"] == "fetch_round":  # the round's answer came at once: receive it
                    self._state = reference_impl.apply(
                        self._state, step_from_dict({"kind": "deliver_fetch", "replica": replica})
                    )


class HwCanDecrease(_Wrapper):
    """A new leader reports its whole log as committed until a follower reports its LEO,
    then falls back: its HW goes backwards. Defective (LeaderHwMonotonic)."""

    name = "shape-hw-decrease"

    def render(self, obs: dict[str, Any]) -> dict[str, Any]:
        obs = copy.deepcopy(obs)
        for rep in obs["replicas"].values():
            remote = rep.get("remote_leo")
            if rep["role"] == "leader" and rep["online"] and remote and all(v is None for v in remote.values()):
                rep["hw"] = rep["leo"]
        return obs


def round_only() -> RoundOnly:
    """Example: whole fetch rounds only, no consume, no follower HW (correct)."""
    return RoundOnly()


def epochs_from_one() -> EpochsFromOne:
    """Example: leader epochs numbered from 1 (correct)."""
    return EpochsFromOne()


def early_answer() -> EarlyAnswer:
    """Example: answers waiting fetches at once (correct)."""
    return EarlyAnswer()


def hw_can_decrease() -> HwCanDecrease:
    """Example: a leader HW that can go backwards (defective)."""
    return HwCanDecrease()
