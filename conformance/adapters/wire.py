"""Steps as they cross the adapter seam: complete, with every default spelled out.

A fixture states only what matters (``{kind: produce, values: [m0]}``); an implementation
should not have to know kconform's defaults. So every step is sent with each of its fields
(``acks: all``, ``to: null``, ...) and a produce without an ``id`` gets the automatic id
the reference gives it: ``p{n}``, n counting the produce steps accepted so far in the run,
from 1 (spec/adapter-protocol.md, "Steps on the wire").
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import fields
from typing import Any

from reference_impl import Step, step_from_dict

_NAMES: dict[type, tuple[str, ...]] = {}


def _names(cls: type) -> tuple[str, ...]:
    names = _NAMES.get(cls)
    if names is None:
        names = _NAMES[cls] = tuple(f.name for f in fields(cls))
    return names


class WireStep(dict[str, Any]):
    """A step as sent (plain data), remembering the ``Step`` it says: an in-process adapter
    over the reference takes that instead of parsing the data again (``parsed_step``)."""

    __slots__ = ("parsed",)

    parsed: Step


def parsed_step(data: Mapping[str, Any]) -> Step:
    """The ``Step`` that ``data`` says; raises ``StepFormatError`` for bad data."""
    if type(data) is WireStep:
        return data.parsed
    return step_from_dict(data)


def wire_step(step: Step, produced: int) -> WireStep:
    """``step`` in full; ``produced`` is how many produce steps were accepted before it."""
    out = WireStep(kind=step.kind)
    for name in _names(type(step)):
        value = getattr(step, name)
        out[name] = list(value) if isinstance(value, tuple) else value
    if step.kind == "produce" and out.get("id") is None:
        out["id"] = f"p{produced + 1}"
        step = dataclasses.replace(step, id=out["id"])
    out.parsed = step
    return out
