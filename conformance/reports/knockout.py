"""The knockout sweep as text and HTML: one row per rule, and the rule x fixture matrix.

Terminal: each rule's status (killed, survived, equivalent, errored, no knockout), its
knockouts killed, the fewest fixture cases killing one of them in a generation where the
rule applies, and the fixtures that kill; then the survivors, the knockouts killed only by
cases they error on ("killed by N (M by error)"), the rules killed by fewer than two
cases, and the totals. HTML adds the matrix itself: a row per rule, a column per
fixture file, and in each cell the generations (H, L, D) whose case kills a knockout of
the rule. The HTML reuses the results report's style (``reports/html.py``).
"""

from __future__ import annotations

import html
from collections.abc import Callable
from typing import Any

from ..search.knockout import EQUIVALENT, EQUIVALENT_IN
from ..search.knockout_sweep import ENOUGH, SHORT, KnockoutVerdict, RuleVerdict, Sweep
from .html import CSS

Table = Callable[[list[list[Any]], list[str]], str]


def _weakest(rule: RuleVerdict) -> str:
    if rule.status in ("no knockout", "equivalent"):
        return "-"
    cases, generation = rule.weakest()
    return f"{cases} ({SHORT.get(generation, generation)})" if generation else str(cases)


def _killers(rule: RuleVerdict, limit: int = 3) -> str:
    """The fixtures that kill the most of the rule's knockouts first."""
    killers = rule.killers()
    kills = {
        b: sum(1 for v in rule.knockouts if any(k.fixture.split("/")[0] == b for k in v.detections)) for b in killers
    }
    names = sorted(killers, key=lambda b: (-kills[b], -len(killers[b]), b))
    text = ", ".join(names[:limit])
    return text + (f" (+{len(names) - limit})" if len(names) > limit else "")


def rows(sweep: Sweep) -> list[list[Any]]:
    out = []
    for rule in sweep.rules:
        killed = sum(1 for v in rule.knockouts if v.status == "killed")
        equivalent = sum(1 for v in rule.knockouts if v.status == "equivalent")
        searched = sorted({k.fixture for v in rule.knockouts for k in v.searched})
        by = _killers(rule) or ", ".join(searched) or "-"
        applies = "".join(SHORT.get(g, g) for g in rule.applies) or "-"
        by_error = sum(1 for v in rule.knockouts if v.status == "killed" and v.by_error)
        notes = [f"{by_error} by error"] if by_error else []
        notes += [f"{equivalent} equivalent"] if equivalent else []
        count = f"{killed}/{len(rule.knockouts)}" + (f" ({', '.join(notes)})" if notes else "")
        out.append([rule.rule, rule.status, count, applies, _weakest(rule), by])
    return out


HEADERS = ["rule", "status", "knockouts killed", "reached in", f"weakest (< {ENOUGH} is weak)", "killed by"]


def terminal(sweep: Sweep, table: Table) -> str:
    lines = [table(rows(sweep), HEADERS), ""]
    survivors = [v for v in sweep.verdicts if v.status == "survived"]
    if survivors:
        lines.append("knockouts no suite kills:")
        lines += [f"  {v.knockout.id}  {v.knockout.where}" for v in survivors]
    by_error = [v for v in sweep.verdicts if v.status == "killed" and v.by_error]
    if by_error:
        lines.append("knockouts killed only by error (the changed reference raises or hangs in the cases shown):")
        lines += [f"  {v.knockout.id}: killed by {_killed_by(v)}: {_first_error(v)}" for v in by_error]
    errored = [v for v in sweep.verdicts if v.status == "errored"]
    if errored:
        lines.append("knockouts that only crash or hang where nothing is counted (a hang skips the later cases):")
        lines += [f"  {v.knockout.id}: {v.errors[0][:100]}" for v in errored]
    same_in = [(v.knockout.id, g) for v in sweep.verdicts for g in v.equivalent_in if v.status != "equivalent"]
    if same_in:
        lines.append("knockouts equivalent in a generation (no case of it can kill them; not counted there):")
        lines += [f"  {kid} [{SHORT.get(g, g)}]: {EQUIVALENT_IN[kid][g][:100]}" for kid, g in same_in]
    weak = sweep.weak()
    if weak:
        lines.append(f"rules whose weakest knockout fewer than {ENOUGH} fixture cases kill (in the generation shown):")
        lines += [f"  {r.rule}: {_weakest(r)}" for r in weak]
    missing = [r.rule for r in sweep.rules if not r.knockouts]
    if missing:
        lines.append(f"rules with no knockout (no site on a line that implements them): {', '.join(missing)}")
    lines.append(summary(sweep))
    return "\n".join(lines) + "\n"


def _by_error(sweep: Sweep) -> str:
    m = sum(1 for v in sweep.verdicts if v.status == "killed" and v.by_error)
    return f" ({m} only by error)" if m else ""


def _killed_by(v: KnockoutVerdict) -> str:
    """``N (M by error)``: the fixture cases that detect a knockout, and how many by an error."""
    n, m = len(v.detections), len(v.errored)
    if not n:
        return ", ".join(k.fixture for k in v.searched) or "nothing"
    return f"{n} case{'s' if n != 1 else ''}" + (f" ({m} by error)" if m else "")


def _first_error(v: KnockoutVerdict) -> str:
    """The first case it errors on, and what it raised (the error without its location)."""
    first = v.errored[0] if v.errored else (v.searched[0] if v.searched else None)
    if first is None:
        return ""
    reason = first.reason.splitlines()[0] if first.reason else ""
    raised = reason[reason.index("raised") :] if "raised" in reason else reason
    return f"{first.fixture} step {first.step}: {raised[:100]}"


def summary(sweep: Sweep) -> str:
    suites = [f"{len(sweep.fixtures)} fixture cases"]
    suites += [f"fuzz ({sweep.fuzz_budget} runs per generation)"] if sweep.fuzz_budget else []
    suites += [f"explore (depth {sweep.explore_depth})"] if sweep.explore_depth else []
    n = len(sweep.verdicts)
    return (
        f"knockouts: {sweep.count('killed')}/{n} killed by {' + '.join(suites)}{_by_error(sweep)}, "
        f"{sweep.count('survived')} survived, "
        f"{sweep.count('equivalent')} equivalent, {sweep.count('errored')} errored; "
        f"{len(sweep.rules)} rules, {sweep.mutants} distinct mutants, {len(sweep.weak())} rules weak; "
        f"time {sweep.seconds:.1f} s"
    )


def matrix_html(sweep: Sweep) -> str:
    """The whole sweep as one HTML page: the rule table, then the rule x fixture matrix."""
    bases = sorted({f.split("/")[0] for f in sweep.fixtures})
    head = "".join(f'<th class="v"><span>{html.escape(b)}</span></th>' for b in bases)
    body = []
    for rule in sweep.rules:
        killers = rule.killers()
        cells = []
        for b in bases:
            gens = "".join(
                SHORT.get(g, g) for g in ("hw-truncation", "leader-epoch", "diverging-epoch") if g in killers.get(b, ())
            )
            cells.append(f'<td class="{"pass" if gens else ""}">{gens}</td>')
        css = {"killed": "pass", "survived": "fail", "errored": "error"}.get(rule.status, "skip")
        body.append(
            f'<tr><th>{html.escape(rule.rule)}</th><td class="{css}">{html.escape(rule.status)}</td>'
            f"<td>{html.escape(_weakest(rule))}</td>{''.join(cells)}</tr>"
        )
    table_rows = "".join(
        "<tr>" + "".join(f"<td>{html.escape(str(c))}</td>" for c in row) + "</tr>" for row in rows(sweep)
    )
    equivalent = "".join(
        f"<tr><td>{html.escape(k)}</td><td>{html.escape(v)}</td></tr>" for k, v in sorted(EQUIVALENT.items())
    ) + "".join(
        f"<tr><td>{html.escape(k)} (under {html.escape(g)})</td><td>{html.escape(why)}</td></tr>"
        for k, by in sorted(EQUIVALENT_IN.items())
        for g, why in sorted(by.items())
    )
    extra = (
        "th.v { height: 14em; white-space: nowrap; vertical-align: bottom; } "
        "th.v span { writing-mode: vertical-rl; transform: rotate(180deg); } td { text-align: center; }"
    )
    return (
        "\n".join(
            [
                "<!doctype html>",
                '<html lang="en"><head><meta charset="utf-8"><title>kconform rule knockouts</title>',
                f"<style>{CSS}{extra}</style></head><body>",
                "<h1>Rule knockouts</h1>",
                f'<p class="note">{html.escape(summary(sweep))}</p>',
                "<h2>Rules</h2><table><tr>" + "".join(f"<th>{html.escape(h)}</th>" for h in HEADERS) + "</tr>",
                table_rows + "</table>",
                "<h2>Rule x fixture matrix</h2>",
                '<p class="note">A cell lists the generations (H hw-truncation, L leader-epoch, D diverging-epoch) '
                "whose case of the fixture kills a knockout of the rule.</p>",
                f"<table><tr><th>rule</th><th>status</th><th>weakest</th>{head}</tr>",
                "\n".join(body) + "</table>",
                "<h2>Equivalent knockouts</h2>"
                "<table><tr><th>knockout</th><th>why no step sequence tells it apart</th></tr>",
                equivalent + "</table>",
                "</body></html>",
            ]
        )
        + "\n"
    )
