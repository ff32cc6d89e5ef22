"""Summary and rule views of a corpus replay, from the document's ``corpus`` totals.

A corpus replay's document lists only the first failures in ``results`` (a million
passing traces would not fit); its ``corpus`` section holds the totals computed by the
replay (``conformance/corpus/aggregate.py``). ``views.summary`` and ``views.rules`` hand
such a document to these functions, so every report format shows corpus-wide counts.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from typing import Any

from .cells import Table, counts_cell, impl_label, plural, rule_key, short_level


def summary(doc: dict[str, Any]) -> Table:
    corpus = doc["corpus"]
    groups = sorted({row["group"] for row in corpus["counts"]})
    per: dict[tuple[str, str], Counter[str]] = defaultdict(Counter)
    total: dict[str, Counter[str]] = defaultdict(Counter)
    for row in corpus["counts"]:
        per[(row["implementation"], row["group"])][row["status"]] += row["traces"]
        total[row["implementation"]][row["status"]] += row["traces"]
    unexpected: Counter[str] = Counter()
    for key, n in corpus["statuses"].items():
        impl, _, status = key.rpartition("/")
        if status in ("FAIL", "ERROR", "XPASS"):
            unexpected[impl] += n
    met = corpus.get("level_met") or {}
    rows = [
        [impl_label(impl)]
        + [counts_cell(per[(impl["id"], g)]) for g in groups]
        + [counts_cell(total[impl["id"]]), str(unexpected[impl["id"]]), short_level(met.get(impl["id"], "-"))]
        for impl in doc["implementations"]
    ]
    steps = sum(corpus["steps"].values())
    took = f"{doc['run']['duration_s']:.1f} s"
    if isinstance(corpus.get("job_s"), int | float):  # the replay itself, and with start-up (one figure each)
        took = f"{corpus['job_s']:.1f} s of replay ({took} in all)"
    note = (
        f"{plural(corpus['lines'], 'corpus line')} x {plural(len(doc['implementations']), 'implementation')}, "
        f"{plural(steps, 'step')} in {took}; columns are trace shapes"
    )
    skips = corpus.get("skip_reasons") or []
    if skips:
        top = ", ".join(f"{s['traces']} {s['implementation']}: {s['reason']}" for s in skips[:3])
        more = f" (and {len(skips) - 3} more reasons in results.json)" if len(skips) > 3 else ""
        note += f"; skipped: {top}{more}"
    early = corpus.get("ended_early") or []
    if early:
        top = ", ".join(f"{s['traces']} {s['implementation']}: {s['reason']}" for s in early[:2])
        note += f"; passed but ended before their last step (judged on the steps that ran): {top}"
        if len(early) > 2:
            note += f" (and {len(early) - 2} more reasons in results.json)"
    incomplete = corpus.get("incomplete")
    if isinstance(incomplete, dict):
        note += (
            f"; INCOMPLETE: interrupted with {incomplete.get('splits_finished')} of {incomplete.get('splits')} "
            "splits done (kconform replay ... --rerun OUT resumes it)"
        )
    if corpus.get("malformed_lines"):
        note += f"; {corpus['malformed_lines']} malformed corpus lines counted as errored"
    if corpus.get("failures_shown", 0) < sum(unexpected.values()):
        note += (
            f"; the report lists the first {corpus['failures_shown']} failures in corpus order, "
            f"every result is in {corpus.get('results_dir', 'the per-trace results')}"
        )
    level = (doc["run"].get("selection") or {}).get("level")
    if level:
        note += f"; outcomes judged at level {level}"
    for impl, why in met.items():
        if why != short_level(why):
            note += f"\n{impl}: {why}"
    return Table("Summary", ["implementation", *groups, "total", "unexpected", "level met"], rows, note)


def rules(doc: dict[str, Any]) -> Table:
    """Per rule and implementation: traces passed / traces that exercise it, and how many
    failed there (divergent step fired the rule)."""
    impls = [i["id"] for i in doc["implementations"]]
    rows_by: dict[tuple[str, str], dict[str, int]] = {
        (r["rule"], r["implementation"]): r for r in doc["corpus"]["rules"]
    }
    all_rules = sorted({rule for rule, _ in rows_by}, key=rule_key)
    rows = []
    for rule in all_rules:
        cells = []
        for impl in impls:
            r = rows_by.get((rule, impl))
            if r is None or not r["traces"]:
                cells.append("-")
                continue
            mark = "✓" if r["passed"] == r["traces"] else "✗"
            cell = f"{mark} {r['passed']}/{r['traces']}"
            if r["diverged_at"]:
                cell += f" ({r['diverged_at']} diverged here)"
            cells.append(cell)
        rows.append([rule, *cells])
    note = (
        "traces passed / traces that exercise the rule (the reference fires it); "
        "'diverged here': failures whose first divergent step fired the rule"
    )
    return Table("Rules", ["rule", *impls], rows, note)
