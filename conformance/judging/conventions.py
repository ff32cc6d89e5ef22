"""Observation conventions: the harmless ways an implementation's observations differ in
form from the reference's, declared in ``describe`` and undone before any comparison.

A real implementation numbers epochs from 1, reports an unknown remote LEO as 0 or leaves
it out, keeps a crashed broker's last role, or has no follower HW at all. None of that is a
replication defect, so kconform normalises the observation (and, where the information is
gone, the expectation) instead of failing the fixture. The conventions
(spec/adapter-protocol.md, "Conventions"):

- ``unknown_remote_leo``: ``null`` (the reference), ``absent`` (the follower is left out of
  ``remote_leo``) or ``zero`` (reported as 0: an expected null is then compared as 0);
- ``epoch_base``: 0 (the reference) or 1 (every epoch is one more than the reference's);
- ``offline_role``: ``none`` (the reference: a crashed broker has no role) or ``kept`` (it
  still reports its last role, leader and epoch: those are not compared while offline).

Finer capabilities (``Description.role_fields``, ``step_fields``) are applied here too: a
replica field is compared only on a replica whose role reports it, and a fixture step
using an optional step field the implementation does not honour skips the fixture.
"""

from __future__ import annotations

import copy
import functools
import re
from collections.abc import Sequence
from dataclasses import MISSING, dataclass, fields
from typing import Any

from reference_impl import Step

from ..adapters.base import Description

UNKNOWN_REMOTE_LEO = ("null", "absent", "zero")
OFFLINE_ROLE = ("none", "kept")
EPOCH_BASES = (0, 1)


class ConventionError(ValueError):
    """An implementation declared a convention kconform does not know."""


@dataclass(frozen=True)
class Conventions:
    unknown_remote_leo: str = "null"
    epoch_base: int = 0
    offline_role: str = "none"

    @classmethod
    def of(cls, description: Description) -> Conventions:
        raw = description.conventions or {}
        try:
            return _checked(tuple(sorted(raw.items())))
        except TypeError:  # an unhashable value: checked (and refused) below
            return cls._check(raw)

    @classmethod
    def _check(cls, raw: dict[str, Any]) -> Conventions:
        unknown = set(raw) - {f.name for f in fields(cls)}
        if unknown:
            raise ConventionError(f"unknown conventions: {', '.join(sorted(unknown))}")
        out = cls(**raw)
        if out.unknown_remote_leo not in UNKNOWN_REMOTE_LEO:
            raise ConventionError(f"unknown_remote_leo must be one of {UNKNOWN_REMOTE_LEO}")
        if out.epoch_base not in EPOCH_BASES:
            raise ConventionError(f"epoch_base must be one of {EPOCH_BASES}")
        if out.offline_role not in OFFLINE_ROLE:
            raise ConventionError(f"offline_role must be one of {OFFLINE_ROLE}")
        return out


@functools.lru_cache(maxsize=64)
def _checked(items: tuple[tuple[str, Any], ...]) -> Conventions:
    """``Conventions.of`` is asked at every step: declared conventions are checked once."""
    return Conventions._check(dict(items))


_AT_EPOCH = re.compile(r"@(-?\d+)$")


def _shift_record(record: Any, delta: int) -> Any:
    if not isinstance(record, str):
        return record
    return _AT_EPOCH.sub(lambda m: f"@{int(m.group(1)) + delta}", record)


def _shift(value: Any, delta: int) -> Any:
    return value + delta if isinstance(value, int) and not isinstance(value, bool) else value


def normalise(observation: dict[str, Any], description: Description, replicas: Sequence[str]) -> dict[str, Any]:
    """The implementation's observation in the reference's conventions (a new dict)."""
    conv = Conventions.of(description)
    if conv == Conventions():
        return observation  # the reference's conventions: nothing to undo (and nothing copied)
    obs = copy.deepcopy(observation)
    if conv.epoch_base:
        delta = -conv.epoch_base
        if "leader_epoch" in obs:
            obs["leader_epoch"] = _shift(obs["leader_epoch"], delta)
        for rep in (obs.get("replicas") or {}).values():
            if not isinstance(rep, dict):
                continue
            if "leader_epoch" in rep:
                rep["leader_epoch"] = _shift(rep["leader_epoch"], delta)
            if isinstance(rep.get("log"), list):
                rep["log"] = [_shift_record(r, delta) for r in rep["log"]]
            if isinstance(rep.get("epoch_cache"), list):
                rep["epoch_cache"] = [
                    [_shift(e[0], delta), *e[1:]] if isinstance(e, list) and e else e for e in rep["epoch_cache"]
                ]
        consumer = obs.get("consumer")
        if isinstance(consumer, dict) and isinstance(consumer.get("records"), list):
            consumer["records"] = [_shift_record(r, delta) for r in consumer["records"]]
    if conv.unknown_remote_leo == "absent":
        for name, rep in (obs.get("replicas") or {}).items():
            if isinstance(rep, dict) and rep.get("role") == "leader" and isinstance(rep.get("remote_leo"), dict):
                for other in replicas:
                    if other != name:
                        rep["remote_leo"].setdefault(other, None)
    return obs


def adjust_expected(
    expected: dict[str, Any], description: Description, observed: dict[str, Any], roles: dict[str, str]
) -> dict[str, Any]:
    """The part of an expectation this implementation can be held to, in its conventions.

    ``roles``: each replica's role in the reference at that step (for ``role_fields``)."""
    conv = Conventions.of(description)
    if conv == Conventions() and not description.role_fields:
        return expected  # the reference's conventions, every field on every role: as written
    out = copy.deepcopy(expected)
    reps = out.get("replicas")
    if not isinstance(reps, dict):
        return out
    seen = observed.get("replicas") or {}
    for name in list(reps):
        fields_ = reps[name]
        role = roles.get(name)
        allowed = description.role_fields.get(role) if role is not None else None
        if allowed is not None:
            fields_ = {k: v for k, v in fields_.items() if k in allowed}
        if conv.offline_role == "kept" and isinstance(seen.get(name), dict) and seen[name].get("online") is False:
            fields_ = {k: v for k, v in fields_.items() if k not in ("role", "leader", "leader_epoch")}
        if conv.unknown_remote_leo == "zero" and isinstance(fields_.get("remote_leo"), dict):
            fields_["remote_leo"] = {k: (0 if v is None else v) for k, v in fields_["remote_leo"].items()}
        if fields_:
            reps[name] = fields_
        else:
            del reps[name]
    if not reps:
        del out["replicas"]
    return out


def unsupported_step_field(step: Step, description: Description) -> str | None:
    """The first optional field ``step`` sets (away from its default) that the
    implementation does not honour, or None."""
    honoured = description.step_fields.get(step.kind)
    if honoured is None:
        return None
    for f in fields(step):
        if f.default is MISSING or f.name in honoured:
            continue
        if getattr(step, f.name) != f.default:
            return f.name
    return None
