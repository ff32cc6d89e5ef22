"""A zoo member judged as if it had another implementation's shape (``sensitivity --like``).

A member has every step kind and reports every field, so the suite sees its bug wherever
the bug shows. A user's implementation often has fewer: whole fetch rounds and no
separate delivery, only logs and LEOs reported, no ``initial:`` start. The same bug in such
an implementation may show only through what it does report (a record appended that the
reference refuses), or not at all within the fixtures it can run. Judging every member
through the user's implementation's description answers "which of these bugs would the
suite still catch in an implementation shaped like mine?"; a member that fuzz, shaped the
same way, still kills but no fixture does marks a fixture to write
(docs/suite-strength.md, "Implementations that report less").

The shaped member is the member with

- the other implementation's step kinds, optional step fields, observation fields,
  replica fields (and per-role ones), ``initial:`` capability and config limits, and the
  generations both implement;
- every observation cut to those fields (what such an implementation could show);
- for each round it has without its parts (``fetch_round`` without ``deliver_fetch``),
  every answer of that kind delivered as soon as it exists, as a rounds-only
  implementation receives it (the node example and ``shape-round-only`` do the same).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from reference_impl import Generation
from reference_impl.steps import DELIVERIES, ROUNDS

from ..adapters.base import Adapter, Description, StepResult
from .base import Member, Mutant

MAX_DELIVERIES = 8
"""Answers delivered by themselves after one step, at most (each delivery may wake another)."""


class Shaped(Adapter):
    """``inner`` (a zoo member's adapter) behind the description ``like``."""

    def __init__(self, inner: Adapter, like: Description) -> None:
        self.inner, self.like = inner, like
        own = inner.describe()
        self._description = dataclasses.replace(
            own,
            generations=tuple(g for g in own.generations if g in like.generations),
            steps=like.steps,
            fields=like.fields,
            replica_fields=like.replica_fields,
            role_fields=dict(like.role_fields),
            step_fields=dict(like.step_fields),
            initial_state=like.initial_state and own.initial_state,
            limits=dict(like.limits),
        )
        self._deliver = tuple(
            delivery for kind, (_, delivery) in ROUNDS.items() if kind in like.steps and delivery not in like.steps
        )
        """The deliveries this shape does not have as steps: made by themselves."""

    def describe(self) -> Description:
        return self._description

    def reset(self, config: dict[str, Any], initial: dict[str, Any] | None = None) -> None:
        self.inner.reset(config, initial)

    def step(self, step: dict[str, Any]) -> StepResult:
        result = self.inner.step(step)
        observation = result.observation
        if observation is None:
            return result
        for _ in range(MAX_DELIVERIES):
            pending = self._pending(observation)
            if pending is None:
                break
            delivered = self.inner.step(pending).observation
            if delivered is None:
                break
            observation = delivered
        return StepResult(observation=self._cut(observation))

    def _pending(self, observation: dict[str, Any]) -> dict[str, Any] | None:
        """The first delivery this shape makes by itself, or None."""
        in_flight = observation.get("in_flight") or {}
        for kind in self._deliver:
            for line in in_flight.get(DELIVERIES[kind]) or ():  # "X->R Answer(...)": R receives it
                return {"kind": kind, "replica": str(line).split(" ", 1)[0].split("->")[1]}
        return None

    def _cut(self, observation: dict[str, Any]) -> dict[str, Any]:
        """The observation as this shape reports it: its fields, its replicas' fields."""
        like = self.like
        out = {k: v for k, v in observation.items() if k in like.fields}
        replicas = out.get("replicas")
        if isinstance(replicas, dict):
            out["replicas"] = {name: self._replica(rep) for name, rep in replicas.items()}
        return out

    def _replica(self, replica: dict[str, Any]) -> dict[str, Any]:
        keep = self.like.role_fields.get(str(replica.get("role")), self.like.replica_fields)
        return {k: v for k, v in replica.items() if k in keep}

    def close(self) -> None:
        self.inner.close()


@dataclass(frozen=True)
class ShapedMember(Member):
    """A member whose adapter is ``Shaped`` by ``like`` (what ``sensitivity`` builds)."""

    like: Description | None = None

    def build(self) -> Adapter:  # type: ignore[override]  # a Shaped adapter, not a Mutant
        inner = super().build()
        return inner if self.like is None else Shaped(inner, self.like)


CONTROL = Member(
    name="reference",
    number=0,
    source="the reference itself: the control a shaped zoo is judged beside",
    generations=tuple(g.value for g in Generation),
    rules=(),
    cls=Mutant,
)
"""The reference as a member (a ``Mutant`` that patches nothing). Shaped like a user's
implementation it must pass every fixture and search at the level used: where it fails,
the shape itself fails that level (a rounds-only implementation receives answers
earlier than ``exact`` allows), and a member's failure there says nothing of its bug."""


def shaped(member: Member, like: Description) -> ShapedMember:
    """``member`` judged with the shape ``like`` describes."""
    fields = {f.name: getattr(member, f.name) for f in dataclasses.fields(member)}
    return ShapedMember(**fields, like=like)


__all__ = ["CONTROL", "Shaped", "ShapedMember", "shaped"]
