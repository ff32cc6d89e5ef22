"""The results document: one JSON file per run, the source of every report format.

It carries the run's metadata (suite version, when, how long, what was selected), each
implementation (name, version, capabilities), each fixture (id, source, tags, rules,
config), and one record per (implementation, fixture) pair. ``kconform report``
re-renders a saved document; ``kconform diff`` compares two.
"""

from __future__ import annotations

import contextlib
import json
import platform
import time
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import reference_impl

from ..adapters.base import Adapter, AdapterError, Description
from ..fixtures.loading import Fixture
from ..judging.expectations import Expectations
from ..judging.runner import FixtureResult, ProgressFn, reference_trace, run_fixtures

FORMAT_VERSION = 1


class ResultsError(Exception):
    """A results file cannot be read as a kconform results document."""


class ImplementationCannotStart(Exception):
    """An implementation failed its handshake (missing program, exits at once, hangs or
    answers hello wrongly): nothing was run. ``detail`` carries stderr and the exchange."""

    def __init__(self, impl_id: str, message: str, detail: str = "") -> None:
        super().__init__(f"implementation {impl_id!r} cannot start: {message}")
        self.impl_id = impl_id
        self.detail = detail


@dataclass(frozen=True)
class Implementation:
    id: str
    """What the user named (``reference-leader-epoch``, ``exec:./broker``)."""
    adapter: Adapter


def fixture_record(fixture: Fixture) -> dict[str, Any]:
    return {
        "id": fixture.id,
        "base_id": fixture.base_id,
        "title": fixture.title,
        "source": fixture.source,
        "tags": list(fixture.tags),
        "rules": list(fixture.rules),
        "generation": fixture.generation.value,
        "group": fixture.group,
        "path": fixture.path,
        "steps": len(fixture.steps),
        "config": fixture.config.to_dict(),
        **({"initial": fixture.initial} if fixture.initial is not None else {}),
    }


def run_suite(
    implementations: Sequence[Implementation],
    fixtures: Sequence[Fixture],
    expectations: Expectations | None = None,
    progress: ProgressFn | None = None,
    selection: dict[str, Any] | None = None,
    level: str = "exact",
    fair_suffix: bool = False,
) -> dict[str, Any]:
    """Run every fixture on every implementation and build the results document.

    Each fixture's outcome is its verdict at ``level`` (``levels.LEVELS``); every record
    also keeps the verdicts at all levels, from which a report shows the highest one met.

    Every implementation is started (``describe``) before any fixture runs; one that cannot
    start raises ``ImplementationCannotStart`` once, instead of erroring every fixture.
    """
    started = datetime.now(UTC)
    t0 = time.perf_counter()
    for impl in implementations:
        try:
            impl.adapter.describe()
        except AdapterError as exc:
            _close_all(implementations)
            raise ImplementationCannotStart(impl.id, exc.message, exc.detail) from None
    traces = {f.id: reference_trace(f) for f in fixtures}
    impl_records: list[dict[str, Any]] = []
    results: list[dict[str, Any]] = []
    for impl in implementations:
        t_impl = time.perf_counter()
        known = expectations.known(_names(impl)) if expectations is not None else None
        description, impl_results = run_fixtures(
            impl.adapter, impl.id, fixtures, traces, progress, level, known, fair_suffix
        )
        with contextlib.suppress(Exception):  # closing must not lose the results gathered
            impl.adapter.close()
        names = (impl.id,) + ((description.name,) if description else ())
        for fixture, result in zip(fixtures, impl_results, strict=True):
            apply_expectation(result, expectations, names, fixture)
            results.append(result.to_dict())
        impl_records.append(_impl_record(impl.id, description, time.perf_counter() - t_impl))
    return {
        "kconform": {"format": FORMAT_VERSION, "suite_version": reference_impl.__version__},
        "run": {
            "started": started.isoformat(timespec="seconds"),
            "duration_s": round(time.perf_counter() - t0, 3),
            "python": platform.python_version(),
            "platform": platform.platform(terse=True),
            "selection": selection or {},
        },
        "implementations": impl_records,
        "fixtures": [fixture_record(f) for f in fixtures],
        "results": results,
    }


def _names(impl: Implementation) -> tuple[str, ...]:
    """The names an expectations file may give ``impl`` by: its id and the name it reports."""
    try:
        return (impl.id, impl.adapter.describe().name)
    except AdapterError:
        return (impl.id,)


def _close_all(implementations: Sequence[Implementation]) -> None:
    for impl in implementations:
        with contextlib.suppress(Exception):
            impl.adapter.close()


def apply_expectation(
    result: FixtureResult, expectations: Expectations | None, names: tuple[str, ...], fixture: Fixture
) -> None:
    """Mark ``result`` expected to fail where the expectations list its fixture (or trace) id."""
    if expectations is None:
        return
    reason = expectations.reason(names, fixture.id, fixture.base_id)
    if reason is not None:
        result.expected = "fail"
        result.expected_reason = reason


def _impl_record(impl_id: str, description: Description | None, seconds: float) -> dict[str, Any]:
    record: dict[str, Any] = {"id": impl_id, "duration_s": round(seconds, 3)}
    if description is None:
        record.update({"name": impl_id, "version": "", "error": "the implementation did not describe itself"})
    else:
        record.update(description.to_dict())
    return record


def write_document(document: dict[str, Any], path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(document, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")


def load_document(path: Path) -> dict[str, Any]:
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ResultsError(f"{path}: cannot read: {exc.strerror or exc}") from None
    except json.JSONDecodeError as exc:
        raise ResultsError(f"{path}:{exc.lineno}: not JSON: {exc.msg}") from None
    if not isinstance(document, dict) or "kconform" not in document:
        raise ResultsError(f"{path}: not a kconform results document (no 'kconform' header)")
    version = document["kconform"].get("format")
    if version != FORMAT_VERSION:
        raise ResultsError(f"{path}: results format {version!r}, this kconform reads {FORMAT_VERSION}")
    for key in ("implementations", "fixtures", "results"):
        if not isinstance(document.get(key), list):
            raise ResultsError(f"{path}: '{key}' must be a list")
    return document


def unexpected_count(document: dict[str, Any]) -> int:
    return sum(1 for r in document["results"] if r["status"] in ("FAIL", "ERROR", "XPASS"))


def diff_documents(old: dict[str, Any], new: dict[str, Any]) -> dict[str, list[dict[str, Any]]]:
    """Regressions (passed before, not now), fixes (the reverse), and other changes."""
    before = {(r["implementation"], r["fixture"]): r for r in old["results"]}
    after = {(r["implementation"], r["fixture"]): r for r in new["results"]}
    out: dict[str, list[dict[str, Any]]] = {"regressions": [], "fixes": [], "changed": [], "added": [], "removed": []}
    for key in sorted(set(before) | set(after)):
        impl, fixture = key
        if key not in before:
            out["added"].append({"implementation": impl, "fixture": fixture, "new": after[key]["outcome"]})
            continue
        if key not in after:
            out["removed"].append({"implementation": impl, "fixture": fixture, "old": before[key]["outcome"]})
            continue
        a, b = before[key]["outcome"], after[key]["outcome"]
        if a == b:
            continue
        row = {"implementation": impl, "fixture": fixture, "old": a, "new": b, "reason": after[key]["reason"]}
        if a == "passed":
            out["regressions"].append(row)
        elif b == "passed":
            out["fixes"].append(row)
        else:
            out["changed"].append(row)
    return out
