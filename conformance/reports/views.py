"""The report views, as tables of plain cells computed from a results document.

Each view is format-neutral (headers and rows of strings); ``terminal``, ``markdown``,
``html`` render them with tabulate, ``junit`` and ``json`` take the document directly.

- ``summary``: implementations x fixture groups, passed / failed / errored / skipped;
- ``matrix``: fixtures x implementations, one status per cell;
- ``rules``: which spec rules each implementation exercised and passed;
- ``failures``: for each failing fixture, the differing fields at its first divergent step.
"""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from dataclasses import dataclass
from typing import Any

STATUS_MARK = {"PASS": "pass", "FAIL": "FAIL", "ERROR": "ERROR", "SKIP": "skip", "XFAIL": "xfail", "XPASS": "XPASS"}


@dataclass(frozen=True)
class Table:
    title: str
    headers: list[str]
    rows: list[list[str]]
    note: str = ""


def _impl_label(impl: dict[str, Any]) -> str:
    name = impl.get("name") or impl["id"]
    label = impl["id"] if name == impl["id"] else f"{impl['id']} ({name})"
    return f"{label} {impl.get('version', '')}".strip()


def _counts_cell(counter: Counter[str]) -> str:
    total = sum(counter.values())
    if not total:
        return "-"
    parts = [f"{counter['passed']}/{total} passed"]
    for outcome in ("failed", "errored", "skipped"):
        if counter[outcome]:
            parts.append(f"{counter[outcome]} {outcome}")
    return ", ".join(parts)


def summary(doc: dict[str, Any]) -> Table:
    if "corpus" in doc:  # a corpus replay: totals, not one record per trace
        from . import corpus

        return corpus.summary(doc)
    fixtures = {f["id"]: f for f in doc["fixtures"]}
    groups = sorted({f["group"] for f in doc["fixtures"]})
    per: dict[tuple[str, str], Counter[str]] = defaultdict(Counter)
    total: dict[str, Counter[str]] = defaultdict(Counter)
    unexpected: Counter[str] = Counter()
    for r in doc["results"]:
        group = fixtures.get(r["fixture"], {}).get("group", "?")
        per[(r["implementation"], group)][r["outcome"]] += 1
        total[r["implementation"]][r["outcome"]] += 1
        if r["status"] in ("FAIL", "ERROR", "XPASS"):
            unexpected[r["implementation"]] += 1
    rows = []
    for impl in doc["implementations"]:
        rows.append(
            [_impl_label(impl)]
            + [_counts_cell(per[(impl["id"], g)]) for g in groups]
            + [_counts_cell(total[impl["id"]]), str(unexpected[impl["id"]])]
        )
    n_fix = len(doc["fixtures"])
    note = f"{n_fix} fixtures x {len(doc['implementations'])} implementations in {doc['run']['duration_s']} s"
    skips = Counter(_skip_kind(r["reason"]) for r in doc["results"] if r["outcome"] == "skipped")
    if skips:
        note += "; skipped: " + ", ".join(f"{n} {kind}" for kind, n in skips.most_common())
    return Table("Summary", ["implementation", *groups, "total", "unexpected"], rows, note)


def _skip_kind(reason: str) -> str:
    """A skip reason without its specifics, for counting (``generation not supported``)."""
    if reason.startswith("generation "):
        return "for a generation the implementation does not implement"
    if reason.startswith("step kinds"):
        return "for step kinds it does not support"
    return reason


def matrix(doc: dict[str, Any]) -> Table:
    status = {(r["implementation"], r["fixture"]): r["status"] for r in doc["results"]}
    impls = [i["id"] for i in doc["implementations"]]
    rows = [
        [f["id"], f["generation"]] + [STATUS_MARK.get(status.get((i, f["id"]), ""), "") for i in impls]
        for f in doc["fixtures"]
    ]
    return Table("Fixtures", ["fixture", "generation", *impls], rows)


def rules(doc: dict[str, Any]) -> Table:
    """Per rule and implementation: fixtures passed / fixtures run that exercise it."""
    if "corpus" in doc:
        from . import corpus

        return corpus.rules(doc)
    impls = [i["id"] for i in doc["implementations"]]
    passed: dict[tuple[str, str], int] = Counter()
    ran: dict[tuple[str, str], int] = Counter()
    all_rules: set[str] = set()
    for r in doc["results"]:
        if r["outcome"] == "skipped":
            continue
        for rule in r.get("rules", []):
            all_rules.add(rule)
            ran[(rule, r["implementation"])] += 1
            if r["outcome"] == "passed":
                passed[(rule, r["implementation"])] += 1
    rows = []
    for rule in sorted(all_rules, key=_rule_key):
        cells = []
        for impl in impls:
            n = ran[(rule, impl)]
            p = passed[(rule, impl)]
            cells.append("-" if not n else f"{'✓' if p == n else '✗'} {p}/{n}")
        rows.append([rule, *cells])
    note = "fixtures passed / fixtures run that exercise the rule (rules the reference fires on the fixture)"
    return Table("Rules", ["rule", *impls], rows, note)


def _rule_key(rule: str) -> tuple[str, int]:
    head, _, num = rule.rpartition("-")
    return head, int(num) if num.isdigit() else 0


def _cell(value: Any) -> str:
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False)


def failures(doc: dict[str, Any], include_expected: bool = False) -> list[Table]:
    """One table per failed or errored result: where it diverged, field by field."""
    fixtures = {f["id"]: f for f in doc["fixtures"]}
    out = []
    for r in doc["results"]:
        if r["outcome"] not in ("failed", "errored"):
            continue
        if r["status"] == "XFAIL" and not include_expected:
            continue
        fixture = fixtures.get(r["fixture"], {})
        title = f"{r['implementation']} / {r['fixture']}: {r['status']}"
        if r["outcome"] == "errored":
            rows = [["reason", r["reason"]]]
            if r.get("detail"):
                rows.append(["detail", r["detail"]])
            out.append(Table(title, ["", ""], rows, fixture.get("title", "")))
            continue
        d = r.get("divergence") or {}
        diffs = d.get("differences") or [d]
        rows = [
            [str(d.get("step", "")), x.get("field", ""), _cell(x.get("expected")), _cell(x.get("actual"))]
            for x in diffs
        ]
        note = f"{fixture.get('title', '')} ({fixture.get('path', '')}:{d.get('line', '')})"
        if d.get("why"):
            note += f"; step says: {d['why'].strip()}"
        if r["status"] == "XFAIL":
            note += f"; expected to fail: {r['expected_reason']}"
        out.append(Table(title, ["step", "field", "expected", "actual"], rows, note))
    return out
