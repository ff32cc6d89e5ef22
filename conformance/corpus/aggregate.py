"""Totals over a corpus replay, mergeable in any order, and the results document built from them.

Each split yields one ``Aggregate``; backends merge them (Spark with ``reduce`` on the
executors' partials), so nothing proportional to the corpus reaches the driver: counts
per implementation, shape and outcome; per-rule coverage (traces that exercise a rule)
and failures (traces that failed while exercising it, and those whose divergent step
fired it); steps run; and the first N failures in corpus order (file, line), the same
N whatever the backend or partitioning.

``document`` turns the totals into a results document of the usual shape
(``conformance/reports/results.py``): ``results`` and ``fixtures`` hold the first failures,
and a ``corpus`` section holds the totals, which the report views use for the summary
and rule tables.
"""

from __future__ import annotations

import heapq
import platform
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import reference_impl

from ..judging.levels import LEVELS
from ..judging.safety import Coverage, certificate
from ..judging.signature import blank, failure_signature, skip_signature
from ..reports.results import FORMAT_VERSION

FIRST_FAILURES = 100
"""Failures kept (with their trace ids) for the report; all are in the per-trace results."""

RULE_FIELDS = ("traces", "passed", "failed", "errored", "diverged_at")

EXAMPLES = 3
"""Trace ids kept per failure signature (the first in corpus order)."""

OrderKey = tuple[str, int, str, int]
"""(file, line, trace id, implementation position): corpus order."""


@dataclass
class Aggregate:
    keep: int = FIRST_FAILURES
    counts: Counter[tuple[str, str, str]] = field(default_factory=Counter)
    """(implementation, shape, status) -> traces (PASS, FAIL, ERROR, SKIP, XFAIL, XPASS)."""
    statuses: Counter[tuple[str, str]] = field(default_factory=Counter)
    """(implementation, status) -> traces."""
    rules: dict[tuple[str, str], list[int]] = field(default_factory=dict)
    """(implementation, rule) -> [traces, passed, failed, errored, diverged_at]."""
    steps: Counter[str] = field(default_factory=Counter)
    duration_ms: Counter[str] = field(default_factory=Counter)
    malformed: int = 0
    first: list[tuple[OrderKey, dict[str, Any], dict[str, Any]]] = field(default_factory=list)
    """The first failures: (order, result record, fixture record), sorted."""
    descriptions: dict[str, dict[str, Any]] = field(default_factory=dict)
    skips: Counter[tuple[str, str]] = field(default_factory=Counter)
    """(implementation, reason) -> skipped traces: why they were not run."""
    level_failed: Counter[tuple[str, str]] = field(default_factory=Counter)
    """(implementation, level) -> judged traces that fail that level (for ``level met``)."""
    judged: Counter[str] = field(default_factory=Counter)
    """Implementation -> traces judged (passed or failed)."""
    safety: dict[tuple[str, str], list[Any]] = field(default_factory=dict)
    """(implementation, property) -> [times checked, sorted missing fields, applicable]."""
    signatures: Counter[tuple[str, str]] = field(default_factory=Counter)
    """(implementation, failure signature) -> failed or errored traces (``judging.signature``)."""
    examples: dict[tuple[str, str], list[tuple[OrderKey, str]]] = field(default_factory=dict)
    """(implementation, signature) -> the first ``EXAMPLES`` (order, trace id) in corpus order."""
    ended_early: Counter[tuple[str, str]] = field(default_factory=Counter)
    """(implementation, why, particulars blanked) -> passed traces whose run ended before
    their last step (a step the implementation lacks): passed on what ran, not on the whole trace."""

    @property
    def results(self) -> int:
        return sum(self.statuses.values())

    def add(self, order: OrderKey, result: dict[str, Any], fixture: dict[str, Any]) -> None:
        impl, outcome = result["implementation"], result["outcome"]
        self.counts[(impl, fixture.get("group", ""), result["status"])] += 1
        self.statuses[(impl, result["status"])] += 1
        self.steps[impl] += result.get("steps_run", 0)
        self.duration_ms[impl] += result.get("duration_ms", 0.0)
        if outcome in ("passed", "failed"):
            self.judged[impl] += 1
            for level, verdict in (result.get("levels") or {}).items():
                if verdict == "failed":
                    self.level_failed[(impl, level)] += 1
            for pid, c in (result.get("safety") or {}).items():
                exercised = int(c.get("exercised", c["checked"]))
                self._cover((impl, pid), [int(c["checked"]), sorted(c["missing"]), bool(c["applicable"]), exercised])
        if outcome == "skipped":
            names = (fixture.get("config") or {}).get("replicas") or ()
            self.skips[(impl, skip_signature(str(result.get("reason") or "no reason given"), names))] += 1
        else:
            diverged = set((result.get("divergence") or {}).get("rules") or ())
            for rule in result.get("rules", ()):
                row = self.rules.setdefault((impl, rule), [0, 0, 0, 0, 0])
                row[0] += 1
                if outcome == "passed":
                    row[1] += 1
                elif outcome == "failed":
                    row[2] += 1
                elif outcome == "errored":
                    row[3] += 1
                if rule in diverged:
                    row[4] += 1
        if outcome in ("failed", "errored"):
            names = (fixture.get("config") or {}).get("replicas") or ()
            key = (impl, failure_signature(result, names))
            self.signatures[key] += 1
            self._example(key, [(order, str(fixture.get("id", "")))])
        elif outcome == "passed" and result.get("stopped"):
            names = (fixture.get("config") or {}).get("replicas") or ()
            self.ended_early[(impl, blank(str(result["stopped"]), names))] += 1
        if result["status"] in ("FAIL", "ERROR", "XPASS"):
            self._keep((order, result, fixture))

    def _example(self, key: tuple[str, str], items: list[tuple[OrderKey, str]]) -> None:
        self.examples[key] = heapq.nsmallest(EXAMPLES, self.examples.get(key, []) + items)

    def _cover(self, key: tuple[str, str], row: list[Any]) -> None:
        mine = self.safety.get(key)
        if mine is None:
            self.safety[key] = [row[0], list(row[1]), row[2], row[3] if len(row) > 3 else row[0]]
            return
        mine[0] += row[0]
        mine[1] = sorted({*mine[1], *row[1]})
        mine[2] = mine[2] or row[2]
        mine[3] += row[3] if len(row) > 3 else row[0]

    def add_malformed(self, order: OrderKey, result: dict[str, Any], fixture: dict[str, Any]) -> None:
        """A corpus line that is not a trace: errored for every implementation."""
        self.malformed += 1
        self.add(order, result, fixture)

    def _keep(self, item: tuple[OrderKey, dict[str, Any], dict[str, Any]]) -> None:
        if len(self.first) < self.keep:
            self.first.append(item)
            self.first.sort(key=lambda x: x[0])
        elif item[0] < self.first[-1][0]:
            self.first[-1] = item
            self.first.sort(key=lambda x: x[0])

    def merge(self, other: Aggregate) -> Aggregate:
        """Add ``other`` into this one (returned, for ``reduce``)."""
        self.counts.update(other.counts)
        self.statuses.update(other.statuses)
        for key, row in other.rules.items():
            mine = self.rules.setdefault(key, [0, 0, 0, 0, 0])
            for i, n in enumerate(row):
                mine[i] += n
        self.steps.update(other.steps)
        self.duration_ms.update(other.duration_ms)
        self.skips.update(other.skips)
        self.level_failed.update(other.level_failed)
        self.judged.update(other.judged)
        for key, row in other.safety.items():
            self._cover(key, row)
        self.signatures.update(other.signatures)
        for key, items in other.examples.items():
            self._example(key, items)
        self.ended_early.update(other.ended_early)
        self.malformed += other.malformed
        self.first = heapq.nsmallest(self.keep, self.first + other.first, key=lambda x: x[0])
        for impl, desc in other.descriptions.items():
            self.descriptions.setdefault(impl, desc)
        return self

    def to_json(self) -> dict[str, Any]:
        """The totals as plain JSON (tuple keys as lists): a finished split's record,
        read back by an interrupted replay's resume (``--rerun``)."""
        return {
            "keep": self.keep,
            "counts": [[*k, n] for k, n in self.counts.items()],
            "statuses": [[*k, n] for k, n in self.statuses.items()],
            "rules": [[*k, row] for k, row in self.rules.items()],
            "steps": dict(self.steps),
            "duration_ms": dict(self.duration_ms),
            "malformed": self.malformed,
            "first": [[list(order), result, fixture] for order, result, fixture in self.first],
            "descriptions": self.descriptions,
            "skips": [[*k, n] for k, n in self.skips.items()],
            "level_failed": [[*k, n] for k, n in self.level_failed.items()],
            "judged": dict(self.judged),
            "safety": [[*k, row] for k, row in self.safety.items()],
            "signatures": [[*k, n] for k, n in self.signatures.items()],
            "examples": [[*k, [[list(o), t] for o, t in items]] for k, items in self.examples.items()],
            "ended_early": [[*k, n] for k, n in self.ended_early.items()],
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Aggregate:
        """The inverse of ``to_json``; raises ``KeyError``/``TypeError``/``ValueError`` on a damaged record."""
        agg = cls(keep=int(data["keep"]))
        agg.counts.update({(i, g, s): int(n) for i, g, s, n in data["counts"]})
        agg.statuses.update({(i, s): int(n) for i, s, n in data["statuses"]})
        agg.rules = {(i, r): [int(x) for x in row] for i, r, row in data["rules"]}
        agg.steps.update({k: int(v) for k, v in data["steps"].items()})
        agg.duration_ms.update({k: float(v) for k, v in data["duration_ms"].items()})
        agg.malformed = int(data["malformed"])
        agg.first = [((o[0], int(o[1]), o[2], int(o[3])), result, fixture) for o, result, fixture in data["first"]]
        agg.descriptions = dict(data["descriptions"])
        agg.skips.update({(i, r): int(n) for i, r, n in data.get("skips", [])})
        agg.level_failed.update({(i, lv): int(n) for i, lv, n in data.get("level_failed", [])})
        agg.judged.update({k: int(v) for k, v in data.get("judged", {}).items()})
        agg.safety = {
            (i, p): [int(r[0]), list(r[1]), bool(r[2]), int(r[3] if len(r) > 3 else r[0])]
            for i, p, r in data.get("safety", [])
        }
        agg.signatures.update({(i, sig): int(n) for i, sig, n in data.get("signatures", [])})
        agg.examples = {
            (i, sig): [((o[0], int(o[1]), o[2], int(o[3])), str(t)) for o, t in items]
            for i, sig, items in data.get("examples", [])
        }
        agg.ended_early.update({(i, why): int(n) for i, why, n in data.get("ended_early", [])})
        return agg


def level_met_of(agg: Aggregate, impl: str) -> str:
    """``levels.level_met`` over a replay's totals for one implementation: not established
    while a trace errored or safety is not certified, else the strictest level no judged
    trace failed."""
    errored = agg.statuses[(impl, "ERROR")]
    judged = agg.judged[impl]
    if errored:
        return f"not established: {errored} of {judged + errored} errored"
    if not judged:
        return "-"
    level = next((lv for lv in LEVELS if not agg.level_failed[(impl, lv)]), "none")
    if level == "none":
        return level
    coverage = {p: Coverage(int(r[0]), tuple(r[1]), bool(r[2])) for (i, p), r in agg.safety.items() if i == impl}
    exercised = {p: int(r[3]) for (i, p), r in agg.safety.items() if i == impl}
    established, reason = certificate([coverage] if coverage else [], exercised)
    return level if established else reason


def merge(a: Aggregate, b: Aggregate) -> Aggregate:
    return a.merge(b)


OUTCOME_OF = {
    "PASS": "passed",
    "FAIL": "failed",
    "ERROR": "errored",
    "SKIP": "skipped",
    "XFAIL": "failed",
    "XPASS": "passed",
}


def outcome_totals(agg: Aggregate, impl: str | None = None) -> dict[str, int]:
    """Results per outcome (passed, failed, errored, skipped), for one or every implementation."""
    out: dict[str, int] = {}
    for (i, _, status), n in agg.counts.items():
        if impl is None or i == impl:
            out[OUTCOME_OF[status]] = out.get(OUTCOME_OF[status], 0) + n
    return out


def unexpected(agg: Aggregate) -> int:
    return sum(n for (_, status), n in agg.statuses.items() if status in ("FAIL", "ERROR", "XPASS"))


def document(
    agg: Aggregate,
    impls: list[str],
    *,
    started: datetime,
    duration_s: float,
    selection: dict[str, Any],
    corpus: dict[str, Any],
) -> dict[str, Any]:
    """The results document of a corpus replay (see the module docstring)."""
    implementations = []
    for spec in impls:
        record: dict[str, Any] = {"id": spec, "duration_s": round(agg.duration_ms[spec] / 1000, 3)}
        desc = agg.descriptions.get(spec)
        if desc is None:
            record.update({"name": spec, "version": "", "error": "the implementation did not describe itself"})
        else:
            record.update(desc)
        implementations.append(record)
    fixtures: dict[str, dict[str, Any]] = {}
    results = []
    for _, result, fixture in agg.first:
        fixtures.setdefault(fixture["id"], fixture)
        results.append(result)
    counts = [
        {"implementation": impl, "group": group, "status": status, "traces": n}
        for (impl, group, status), n in sorted(agg.counts.items())
    ]
    rules = [
        {"implementation": impl, "rule": rule, **dict(zip(RULE_FIELDS, row, strict=True))}
        for (impl, rule), row in sorted(agg.rules.items())
    ]
    unexpected_total = unexpected(agg)
    return {
        "kconform": {"format": FORMAT_VERSION, "suite_version": reference_impl.__version__},
        "run": {
            "started": started.isoformat(timespec="seconds"),
            "duration_s": round(duration_s, 3),
            "python": platform.python_version(),
            "platform": platform.platform(terse=True),
            "selection": selection,
        },
        "implementations": implementations,
        "fixtures": list(fixtures.values()),
        "results": results,
        "corpus": {
            **corpus,
            "results_total": agg.results,
            "malformed_lines": agg.malformed,
            "steps": dict(agg.steps),
            "statuses": {f"{impl}/{status}": n for (impl, status), n in sorted(agg.statuses.items())},
            "counts": counts,
            "rules": rules,
            "unexpected": unexpected_total,
            "failures_shown": len(results),
            "level_met": {impl: level_met_of(agg, impl) for impl in impls},
            "safety": {
                impl: {
                    p: {"checked": r[0], "missing": r[1], "applicable": r[2]}
                    for (i, p), r in agg.safety.items()
                    if i == impl
                }
                for impl in impls
            },
            "skip_reasons": [
                {"implementation": impl, "reason": reason, "traces": n}
                for (impl, reason), n in sorted(agg.skips.items(), key=lambda x: (x[0][0], -x[1], x[0][1]))
            ],
            "signatures": [
                {
                    "implementation": impl,
                    "signature": sig,
                    "traces": n,
                    "examples": [t for _, t in agg.examples.get((impl, sig), [])],
                }
                for (impl, sig), n in sorted(agg.signatures.items(), key=lambda x: (x[0][0], -x[1], x[0][1]))
            ],
            "ended_early": [
                {"implementation": impl, "reason": why, "traces": n}
                for (impl, why), n in sorted(agg.ended_early.items(), key=lambda x: (x[0][0], -x[1], x[0][1]))
            ],
        },
    }
