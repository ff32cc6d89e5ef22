"""The report views, as tables of plain cells computed from a results document.

Each view is format-neutral (headers and rows of strings); ``terminal``, ``markdown``,
``html`` render them with tabulate, ``junit`` and ``json`` take the document directly.

- ``summary``: implementations x fixture groups, passed / failed / errored / skipped;
- ``matrix``: fixtures x implementations, one status per cell;
- ``rules``: which spec rules each implementation exercised and passed, and how often each
  rule fired at the very step where a run diverged (the likely culprit);
- ``signatures``: failed and errored runs grouped by the kind of their first difference;
- ``failures``: for each failing fixture, the differing fields at its first divergent step,
  with the step's kind and the rules the reference fired there.

Steps are numbered from 1 ("step 3" is the third step of the fixture).
"""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from typing import Any

from ..judging.levels import level_met
from ..judging.signature import failure_signature, skip_signature
from .cells import Table, counts_cell, impl_label, plural, rule_key, short_level

STATUS_MARK = {"PASS": "pass", "FAIL": "FAIL", "ERROR": "ERROR", "SKIP": "skip", "XFAIL": "xfail", "XPASS": "XPASS"}


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
        per[(r["implementation"], group)][r["status"]] += 1
        total[r["implementation"]][r["status"]] += 1
        if r["status"] in ("FAIL", "ERROR", "XPASS"):
            unexpected[r["implementation"]] += 1
    rows = []
    unmet: list[str] = []
    for impl in doc["implementations"]:
        own = [r for r in doc["results"] if r["implementation"] == impl["id"]]
        rows.append(
            [impl_label(impl)]
            + [counts_cell(per[(impl["id"], g)]) for g in groups]
            + [counts_cell(total[impl["id"]]), str(unexpected[impl["id"]])]
            + [short_level(level_met(own)), _checked_cell(own)]
        )
        met = level_met(own)
        if met != short_level(met):
            unmet.append(f"{impl['id']}: {met}")
    n_fix = len(doc["fixtures"])
    note = (
        f"{plural(n_fix, 'fixture')} x {plural(len(doc['implementations']), 'implementation')} "
        f"in {doc['run']['duration_s']} s"
    )
    skips = Counter(
        (r["implementation"], skip_signature(r["reason"])) for r in doc["results"] if r["outcome"] == "skipped"
    )
    if skips:  # by implementation when there are several (as a corpus replay's summary says them)
        several = len(doc["implementations"]) > 1
        note += "; skipped: " + ", ".join(
            f"{n} {impl}: {kind}" if several else f"{n} {kind}" for (impl, kind), n in skips.most_common()
        )
    level = (doc["run"].get("selection") or {}).get("level")
    if level:
        note += f"; outcomes judged at level {level}"
    ignored = Counter(r["implementation"] for r in doc["results"] for f in r.get("failures") or () if "known" in f)
    if ignored:
        note += "; ignored as known differences (expectations): " + ", ".join(
            f"{impl} {n}" for impl, n in sorted(ignored.items())
        )
    if unmet:
        note += "\n" + "\n".join(unmet) + "\n(table 'Safety properties': what each property was checked on)"
    headers = ["implementation", *groups, "total", "unexpected", "level met", "expectations checked"]
    return Table("Summary", headers, rows, note)


def safety_coverage(doc: dict[str, Any]) -> Table:
    """Per implementation, each safety property: how many times it was checked over the
    judged results, or why it was not (the fields it needs that were missing)."""
    impls = [i["id"] for i in doc["implementations"]]
    checked: dict[tuple[str, str], int] = defaultdict(int)
    missing: dict[tuple[str, str], set[str]] = defaultdict(set)
    applicable: set[tuple[str, str]] = set()
    for r in doc["results"]:
        if r["outcome"] not in ("passed", "failed"):
            continue
        for pid, c in (r.get("safety") or {}).items():
            key = (pid, r["implementation"])
            checked[key] += int(c.get("checked", 0))
            if c.get("applicable"):
                applicable.add(key)
                missing[key].update(c.get("missing") or ())
    props = sorted({pid for pid, _ in applicable} | {pid for pid, _ in checked})

    def cell(pid: str, impl: str) -> str:
        key = (pid, impl)
        if checked[key]:
            return f"checked {checked[key]:,}"
        if key not in applicable:
            return "n/a"
        if missing[key]:
            return "not checkable: missing " + ", ".join(sorted(missing[key]))
        return "never checked"

    rows = [[pid, *[cell(pid, i) for i in impls]] for pid in props]
    note = (
        "times each property was evaluated on data over the judged results; safety (and so every level) is met "
        "only when every required property was checked (spec/replication.md, 'Safety properties over observations')"
    )
    return Table("Safety properties", ["property", *impls], rows, note)


def _checked_cell(results: list[dict[str, Any]]) -> str:
    """``n of m``: the fixtures' expectations this implementation was held to (coarsening and
    capabilities leave some out)."""
    checked = sum(r.get("checked", 0) for r in results if r["outcome"] != "skipped")
    total = sum(r.get("expectations", 0) for r in results)
    return f"{checked} of {total}" if total else "-"


def matrix(doc: dict[str, Any]) -> Table:
    """One cell per fixture and implementation: the status, and "n/m" when only n of the
    fixture's m expectations could be checked (coarsening, capabilities)."""
    by_key = {(r["implementation"], r["fixture"]): r for r in doc["results"]}
    impls = [i["id"] for i in doc["implementations"]]

    def cell(r: dict[str, Any] | None) -> str:
        if r is None:
            return ""
        mark = STATUS_MARK.get(r["status"], "")
        checked, total = r.get("checked", 0), r.get("expectations", 0)
        if r["outcome"] != "skipped" and total and checked != total:
            mark += f" {checked}/{total}"
        return mark

    rows = [[f["id"], f["generation"]] + [cell(by_key.get((i, f["id"]))) for i in impls] for f in doc["fixtures"]]
    return Table("Fixtures", ["fixture", "generation", *impls], rows, "n/m: n of the fixture's m expectations checked")


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
    for rule in sorted(all_rules, key=rule_key):
        cells = []
        for impl in impls:
            n = ran[(rule, impl)]
            p = passed[(rule, impl)]
            cells.append("-" if not n else f"{'✓' if p == n else '✗'} {p}/{n}")
        rows.append([rule, *cells])
    note = "fixtures passed / fixtures run that exercise the rule (rules the reference fires on the fixture)"
    return Table("Rules", ["rule", *impls], rows, note)


def culprits(doc: dict[str, Any]) -> Table:
    """Per rule: how many failures diverged at a step where the reference fired it.

    A fixture exercises many rules; the ones fired at the divergent step are the likely
    culprits, so this ranks them apart from rules that merely ran earlier.
    """
    impls = [i["id"] for i in doc["implementations"]]
    counts: Counter[tuple[str, str]] = Counter()
    for r in doc["results"]:
        d = r.get("divergence") or {}
        if r["outcome"] != "failed":
            continue
        for rule in d.get("rules") or ():
            counts[(rule, r["implementation"])] += 1
        for rule in d.get("held") or ():
            counts[(f"{rule} (held)", r["implementation"])] += 1
    rules_seen = sorted({rule for rule, _ in counts}, key=lambda x: (-sum(counts[(x, i)] for i in impls), rule_key(x)))
    rows = [[rule, *[str(counts[(rule, i)] or "-") for i in impls]] for rule in rules_seen]
    note = (
        "failed fixtures whose first divergent step fired the rule in the reference, or where a rule deciding a "
        "differing field held its value (held) (most first)"
    )
    return Table("Rules at the divergent step", ["rule", *impls], rows, note)


def _cell(value: Any) -> str:
    """A value as the user wrote it (JSON), never a Python repr: a value that is not data
    (the comparison's marker for a field the implementation did not report) reads so."""
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, default=lambda _: "(not reported)")


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
            if r.get("malformed"):  # it answered, outside the protocol: its defect, not a crash
                title += " (an answer outside the protocol)"
            rows = [["reason", r["reason"]]]
            if r.get("detail"):
                rows.append(["detail", r["detail"]])
            out.append(Table(title, ["", ""], rows, fixture.get("title", "")))
            continue
        d = r.get("divergence") or {}
        diffs = d.get("differences") or [d]
        step = f"{d.get('step', '')} ({d['kind']})" if d.get("kind") else str(d.get("step", ""))
        rows = [
            [
                step if i == 0 else "",
                x.get("field", ""),
                ", ".join(x.get("levels") or [d.get("level", "")]),
                _cell(x.get("expected")),
                _cell(x.get("actual")),
            ]
            for i, x in enumerate(diffs)
        ]
        note = f"{fixture.get('title', '')} ({fixture.get('path', '')}:{d.get('line', '')})"
        if d.get("rules"):
            note += f"; rules fired at this step: {' '.join(d['rules'])}"
        if d.get("held"):
            note += f"; rules that decide these fields and held their value here: {' '.join(d['held'])}"
        if d.get("why"):
            note += f"; step says: {d['why'].strip()}"
        if r["status"] == "XFAIL":
            note += f"; expected to fail: {r['expected_reason']}"
        later = sorted({f["step"] for f in r.get("failures") or [] if f["step"] != d.get("step")})
        if later:
            note += f"; also diverges at steps {', '.join(map(str, later))} (results file: failures)"
        if r.get("stopped"):
            note += f"; {r['stopped']}"
        levels = r.get("levels") or {}
        if r.get("level") == "exact" and levels.get("settled") == "passed":
            note += "; meets settled: the outcomes converge, so this is a difference of timing (docs/levels.md)"
        if r.get("expectations") and r.get("checked") != r.get("expectations"):
            note += f"; {r['checked']} of {r['expectations']} expectations checked"
        out.append(Table(title, ["step", "field", "fails at", "expected", "actual"], rows, note))
    return out


SIGNATURE_ROWS = 30
"""Signatures shown (most traces first); the results document has them all."""


def signatures(doc: dict[str, Any]) -> Table:
    """Failed and errored runs per implementation, grouped by the kind of their first
    difference (``judging.signature``), most first, with the first ids of each: ten
    thousand failing traces read as the few classes they are."""
    if "corpus" in doc:
        rows_in = doc["corpus"].get("signatures") or []
    else:
        configs = {f["id"]: f.get("config") or {} for f in doc["fixtures"]}
        grouped: dict[tuple[str, str], list[str]] = defaultdict(list)
        for r in doc["results"]:
            if r["outcome"] in ("failed", "errored"):
                names = configs.get(r["fixture"], {}).get("replicas") or ()
                grouped[(r["implementation"], failure_signature(r, names))].append(r["fixture"])
        rows_in = [
            {"implementation": i, "signature": sig, "traces": len(ids), "examples": ids[:3]}
            for (i, sig), ids in sorted(grouped.items(), key=lambda x: (x[0][0], -len(x[1]), x[0][1]))
        ]
    rows = [
        [r["implementation"], str(r["traces"]), r["signature"], ", ".join(r["examples"])]
        for r in rows_in[:SIGNATURE_ROWS]
    ]
    note = "failed and errored runs by where they first differ (ids wildcarded, numbers as N), most first"
    if len(rows_in) > SIGNATURE_ROWS:
        note += f"; the first {SIGNATURE_ROWS} of {len(rows_in)} signatures (every one is in the results document)"
    return Table("Failures by first difference", ["implementation", "runs", "first difference", "e.g."], rows, note)


def failure_counts(doc: dict[str, Any]) -> Table:
    """Every divergence of every failed fixture (not only the first), counted per spec rule
    the reference fired at that step and per safety property: where the failures cluster."""
    per: dict[tuple[str, str], Counter[str]] = defaultdict(Counter)
    for r in doc["results"]:
        if r["outcome"] != "failed":
            continue
        seen: set[tuple[str, str, int]] = set()
        for f in r.get("failures") or []:
            if f.get("level") == "settled" and r.get("level") == "exact":
                continue  # the same difference, already counted at exact
            keys = [("property", f["property"])] if f.get("property") else [("rule", x) for x in f.get("rules") or []]
            for key in keys:
                if (key[0], key[1], f["step"]) in seen:
                    continue  # one count per step, however many fields differ there
                seen.add((key[0], key[1], f["step"]))
                per[key][r["implementation"]] += 1
    impls = sorted({i for c in per.values() for i in c})
    rows = [
        [kind, name] + [str(per[(kind, name)][i] or "") for i in impls]
        for (kind, name) in sorted(per, key=lambda k: (k[0] != "property", -sum(per[k].values()), k[1]))
    ]
    return Table(
        "Failures by safety property and by rule",
        ["", "property / rule", *impls],
        rows,
        "divergent steps (every one, not only the first of each fixture); a rule is one the reference fired at "
        "that step",
    )
