"""``kconform explain FIXTURE``: a fixture as a step table, as the seeds write theirs.

For each step: what was done, every observed field that changed (old -> new), the spec
rules the reference fired, and the fixture's own words (``why``). Fields the fixture
checks are marked, so the table shows what is asserted and what merely happens.
"""

from __future__ import annotations

import json
from typing import Any

from tabulate import tabulate

from reference_impl import State, StepRejected, apply, observe
from reference_impl.describe import describe_replica

from ..fixtures.loading import Fixture
from ..judging.compare import leaf_paths
from .fit import fit, terminal_width


def flatten(value: Any, path: str = "") -> dict[str, Any]:
    """Leaf fields of an observation by dotted path; lists stay whole."""
    if isinstance(value, dict):
        out: dict[str, Any] = {}
        for key, sub in value.items():
            out.update(flatten(sub, f"{path}.{key}" if path else str(key)))
        return out
    return {path: value}


def _show(value: Any) -> str:
    if isinstance(value, list):
        return "[" + ", ".join(str(v) if not isinstance(v, list) else json.dumps(v) for v in value) + "]"
    if value is None:
        return "-"
    return str(value)


def action_text(do: dict[str, Any]) -> str:
    """A step's ``do`` as one line: ``fetch replica=B``."""
    rest = " ".join(f"{k}={_show(v)}" for k, v in do.items() if k != "kind")
    return f"{do['kind']} {rest}".strip()


def explain_rows(fixture: Fixture) -> tuple[list[list[str]], State]:
    """The step table's rows, and the state the fixture ends in."""
    state = fixture.start()
    before = flatten(observe(state))
    rows: list[list[str]] = []
    for fs in fixture.steps:
        checked = set(leaf_paths(fs.expect)) if fs.expect else set()
        try:
            state = apply(state, fs.step)
        except StepRejected as exc:
            rows.append([str(fs.number), action_text(fs.do), "(rejected)", "", exc.reason, exc.rule, fs.why or ""])
            continue
        after = flatten(observe(state))
        changed = [k for k in after if after.get(k) != before.get(k)]
        rules = " ".join(dict.fromkeys(state.fired))
        if not changed:
            rows.append([str(fs.number), action_text(fs.do), "(no change)", "", "", rules, (fs.why or "").strip()])
        for i, key in enumerate(changed):
            mark = " *" if any(key == c or key.startswith(c + ".") for c in checked) else ""
            rows.append(
                [
                    str(fs.number) if i == 0 else "",
                    action_text(fs.do) if i == 0 else "",
                    key + mark,
                    _show(before.get(key)),
                    _show(after[key]),
                    rules if i == 0 else "",
                    (fs.why or "").strip() if i == 0 else "",
                ]
            )
        before = after
    return rows, state


def explain(fixture: Fixture, fmt: str = "rounded_outline") -> str:
    head = f"{fixture.id}: {fixture.title}\nsource: {fixture.source}\nfile: {fixture.path}\n"
    config = ", ".join(f"{k}={_show(v)}" for k, v in fixture.config.to_dict().items())
    rows, final = explain_rows(fixture)
    headers = ["step", "do", "field (* = checked)", "old", "new", "rules", "why"]
    if fmt == "github":  # never wrapped in Markdown (a newline would break the table)
        table = tabulate(rows, headers=headers, tablefmt=fmt, disable_numparse=True)
    else:  # wrapped at spaces to the terminal (a rule id or field path is never cut)
        caps = [None, 28, None, 26, 26, 28, 40]
        table = fit(rows, headers, fmt, caps=caps, width=terminal_width())
    end = "\n".join(f"  {describe_replica(r)}" for r in final.replicas)
    start = ""
    if fixture.initial is not None:  # a given initial state: show where the steps start from
        given = fixture.start()
        ctrl = given.controller
        lines = "\n".join(f"  {describe_replica(r)}" for r in given.replicas)
        start = f"initial state: leader={ctrl.leader} epoch={ctrl.epoch} isr=[{','.join(ctrl.isr)}]\n{lines}\n"
    return f"{head}config: {config}\n{start}\n{table}\n\nfinal state:\n{end}\n"
