"""Steps as they cross the adapter seam: complete, with every default spelled out.

A fixture states only what matters (``{kind: produce, values: [m0]}``); an implementation
should not have to know kconform's defaults. So every step is sent with each of its fields
(``acks: all``, ``to: null``, ...) and a produce without an ``id`` gets the automatic id
the reference gives it: ``p{n}``, n counting the produce steps accepted so far in the run,
from 1 (spec/adapter-protocol.md, "Steps on the wire").
"""

from __future__ import annotations

from dataclasses import fields
from typing import Any

from reference_impl import Step


def wire_step(step: Step, produced: int) -> dict[str, Any]:
    """``step`` in full; ``produced`` is how many produce steps were accepted before it."""
    out: dict[str, Any] = {"kind": step.kind}
    for f in fields(step):
        value = getattr(step, f.name)
        out[f.name] = list(value) if isinstance(value, tuple) else value
    if step.kind == "produce" and out.get("id") is None:
        out["id"] = f"p{produced + 1}"
    return out
