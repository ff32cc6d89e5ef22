"""Expected vs observed at a failure's first divergent step, as two diagrams side by side.

The runner stores both observations in the failure record (``expected_state``: the
reference's, ``observed_state``: the implementation's; ``conformance/judging/step_states.py``).
Both are drawn with the same rows and log width, and the fields that differ (the
record's ``differences``) are drawn in red in both, so the eye goes to the divergence.
"""

from __future__ import annotations

import html
from collections.abc import Mapping
from typing import Any

from .draw import Frame, frame_width, replica_ids, scale_cells, step_svg

CSS = """
.diverge { display: flex; flex-wrap: wrap; gap: 1em; justify-content: center; margin: .5em 0 1.5em;
  width: calc(100vw - 3em); margin-left: calc(50% - 50vw + 1.5em); }
.diverge figure { margin: 0; flex: 0 1 auto; } .diverge figcaption { font-weight: 600; margin-bottom: .3em; }
.diverge svg { max-width: 100%; height: auto; border: 1px solid #ddd; }
"""


def highlighted(divergence: Mapping[str, Any]) -> frozenset[str]:
    """The field paths that differ at the step (``(step)`` for acceptance is not a field)."""
    rows = divergence.get("differences") or [divergence]
    return frozenset(str(r.get("field")) for r in rows if r.get("field") and r.get("field") != "(step)")


def divergence_figure(record: Mapping[str, Any]) -> str:
    """HTML for one failed result: expected and observed diagrams, or "" if the record
    carries no states (errored results, results files written before states were kept)."""
    d = record.get("divergence") or {}
    expected = d.get("expected_state")
    if not isinstance(expected, Mapping):
        return ""
    observed = d.get("observed_state")
    step = d.get("step", "?")
    marks = highlighted(d)
    impl = str(record.get("implementation", "implementation"))
    frames = [Frame(expected, f"expected (reference) after step {step}", highlight=marks)]
    if isinstance(observed, Mapping):
        frames.append(Frame(observed, f"observed ({impl}) after step {step}", highlight=marks))
    cells = scale_cells(f.observation for f in frames)
    replicas = replica_ids(f.observation for f in frames)
    width = max(frame_width(f, cells, replicas) for f in frames)
    parts = []
    for frame in frames:
        svg = step_svg(
            Frame(frame.observation, highlight=marks), cells=cells, replicas=replicas, min_width=width, inline=True
        )
        parts.append(f"<figure><figcaption>{html.escape(frame.title)}</figcaption>{svg}</figure>")
    if not isinstance(observed, Mapping):
        note = html.escape(str(d.get("actual", "no observation")))
        parts.append(f"<figure><figcaption>observed ({html.escape(impl)})</figcaption><p>{note}</p></figure>")
    return '<div class="diverge">' + "".join(parts) + "</div>"
