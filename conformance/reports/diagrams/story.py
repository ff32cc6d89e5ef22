"""A fixture told as pictures: the reference's state after every step, drawn.

``kconform explain FIXTURE --svg OUT`` writes ``fixture_svg`` (one strip of every step),
``--html OUT`` writes ``explain_page``: the step table of ``kconform explain`` followed
by one diagram per step with the fixture's own words (``why``), so the seeds' stories
(data loss, divergence) read as the seeds' figures do.
"""

from __future__ import annotations

import html as htmlmod
from collections.abc import Sequence
from pathlib import Path

from tabulate import tabulate

from reference_impl import StepRejected, apply, observe

from ...fixtures.loading import Fixture
from ..explain import action_text, explain_rows
from .draw import Frame, frame_width, replica_ids, scale_cells, step_svg, strip_svg


def fixture_frames(fixture: Fixture) -> list[Frame]:
    """The initial state and the state after each step, as the reference computes them
    (each frame knows the state before it, to show what a step removed)."""
    state = fixture.start()
    frames = [Frame(observe(state), "start", _config_line(fixture))]
    for fs in fixture.steps:
        title = f"step {fs.number}: {action_text(fs.do)}"
        why = " ".join((fs.why or "").split())
        try:
            state = apply(state, fs.step)
        except StepRejected as exc:
            caption = f"rejected [{exc.rule}]: {exc.reason}" + (f" -- {why}" if why else "")
            frames.append(Frame(observe(state), title, caption))
            continue
        frames.append(Frame(observe(state), title, why, previous=frames[-1].observation))
    return frames


def _config_line(fixture: Fixture) -> str:
    config = fixture.config.to_dict()
    return ", ".join(f"{k}={v}" for k, v in config.items() if v is not None and k != "replicas")


def fixture_svg(fixture: Fixture) -> str:
    """Every step of a fixture as one SVG strip."""
    return strip_svg(fixture_frames(fixture), title=f"{fixture.id}: {fixture.title}")


PAGE_CSS = """
body { font: 14px/1.45 system-ui, sans-serif; margin: 2em auto; max-width: 96em; color: #1d1d1f; padding: 0 1em; }
h1 { font-size: 1.5em; } h2 { margin-top: 2em; border-bottom: 1px solid #ddd; }
table { border-collapse: collapse; margin: .5em 0; font-size: 13px; }
th, td { border: 1px solid #ddd; padding: .2em .5em; text-align: left; vertical-align: top; }
th { background: #f5f5f7; } .note { color: #555; }
.step { margin: 1.2em 0; display: flex; flex-wrap: wrap; gap: 1em; align-items: flex-start; }
.step svg { max-width: 100%; height: auto; border: 1px solid #eee; } .changes { flex: 1; min-width: 18em; }
.changes td, .changes th { font-size: 12px; }
.legend span { display: inline-block; padding: 0 .5em; margin-right: .5em; border: 1px solid #999; }
"""

LEGEND = (
    '<p class="legend note">'
    '<span style="background:#2f75b5;color:#fff">committed (below HW)</span>'
    '<span style="background:#bdd7ee">not yet committed</span>'
    '<span style="border-style:dashed;border-color:#c55a11">LEO: next offset</span>'
    '<span style="background:#fff2cc">no data</span>'
    '<span style="background:#8c99a6;color:#fff">crashed replica (log on disk)</span>'
    '<span style="border-style:dashed;border-color:#a04a1c;color:#a04a1c"><s>m1</s> removed by this step</span>'
    " cells show the value and its leader epoch (e0); offsets above; arrows are messages in flight"
    " (dashed: parked at the receiver)</p>"
)


def _step_groups(rows: list[list[str]]) -> list[list[list[str]]]:
    """The explain table's rows split by step (a step's first row carries its number)."""
    groups: list[list[list[str]]] = []
    for row in rows:
        if row[0] or not groups:
            groups.append([])
        groups[-1].append(row)
    return groups


def _changes_table(group: list[list[str]]) -> str:
    """One step's rows of the explain table: field, old -> new; rules fired."""
    body = [[htmlmod.escape(r[2]), htmlmod.escape(r[3]), htmlmod.escape(r[4])] for r in group]
    table = tabulate(body, headers=["field (* = checked)", "old", "new"], tablefmt="unsafehtml", disable_numparse=True)
    rules = group[0][5] if group else ""
    return table + (f'<p class="note">rules fired: {htmlmod.escape(rules)}</p>' if rules else "")


def _section(fixture: Fixture) -> str:
    rows, _ = explain_rows(fixture)
    frames = fixture_frames(fixture)
    cells = scale_cells(f.observation for f in frames)
    replicas = replica_ids(f.observation for f in frames)
    width = max(frame_width(f, cells, replicas) for f in frames)
    groups = _step_groups(rows)
    full = tabulate(
        [[htmlmod.escape(c) for c in row] for row in rows],
        headers=["step", "do", "field (* = checked)", "old", "new", "rules", "why"],
        tablefmt="unsafehtml",
        disable_numparse=True,
    )
    parts = [
        f"<h2>{htmlmod.escape(fixture.id)}</h2>",
        f"<p><b>{htmlmod.escape(fixture.title)}</b><br>"
        f'<span class="note">source: {htmlmod.escape(fixture.source)} · file: {htmlmod.escape(fixture.path)} · '
        f"generation: {htmlmod.escape(fixture.generation.value)}</span></p>",
        f"<p>{htmlmod.escape(' '.join(fixture.description.split()))}</p>" if fixture.description else "",
        LEGEND,
    ]
    for i, frame in enumerate(frames):
        anchor = _anchor(fixture, str(i) if i else "start")  # steps count from 1
        diagram = step_svg(frame, cells=cells, replicas=replicas, min_width=width, inline=True)
        changes = _changes_table(groups[i - 1]) if 0 < i <= len(groups) else ""
        parts.append(f'<div class="step" id="{anchor}"><div>{diagram}</div><div class="changes">{changes}</div></div>')
    parts.append(f"<details><summary>The whole step table</summary>\n{full}\n</details>")
    return "\n".join(p for p in parts if p)


def _anchor(fixture: Fixture, step: str) -> str:
    return f"{fixture.generation.value}-step-{step}"


def explain_page(fixtures: Sequence[Fixture]) -> str:
    """A self-contained HTML page (inline SVG and CSS, no scripts) explaining fixtures."""
    if not fixtures:
        raise ValueError("nothing to explain")
    title = fixtures[0].base_id
    body = "\n".join(_section(f) for f in fixtures)
    return (
        '<!doctype html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>kconform explain {htmlmod.escape(title)}</title><style>{PAGE_CSS}</style></head><body>\n"
        f"<h1>kconform explain {htmlmod.escape(title)}</h1>\n{body}\n</body></html>\n"
    )


def svg_paths(out: Path, fixtures: Sequence[Fixture]) -> list[Path]:
    """Where ``--svg OUT`` writes: OUT itself for one fixture, ``OUT-<generation>.svg`` for several."""
    if len(fixtures) == 1:
        return [out]
    return [out.with_name(f"{out.stem}-{f.generation.value}{out.suffix or '.svg'}") for f in fixtures]


def write_pictures(fixtures: Sequence[Fixture], svg: Path | None = None, html: Path | None = None) -> list[Path]:
    """Write the SVG strip(s) and/or the HTML page; return the files written."""
    written: list[Path] = []
    if svg is not None:
        for path, fixture in zip(svg_paths(svg, fixtures), fixtures, strict=True):
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(fixture_svg(fixture), encoding="utf-8")
            written.append(path)
    if html is not None:
        html.parent.mkdir(parents=True, exist_ok=True)
        html.write_text(explain_page(fixtures), encoding="utf-8")
        written.append(html)
    return written
