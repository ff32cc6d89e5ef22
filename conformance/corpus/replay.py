"""One split replayed on every implementation: the function each backend's workers run.

It lives in the installed package so Spark executors and pool workers import it by
name. Per split it starts its own adapters (in-process, or ``exec:`` child processes),
runs each trace through the fixture runner (``runner.run_fixture``: the comparison and
the result schema are the runner's), restarts an adapter after an errored trace (a
crash or a hang then costs that trace only), writes one result record per trace and
implementation to its own JSON Lines part file, and returns the split's ``Aggregate``.
A corpus line that is not a trace is an errored result for every implementation, with
its ``file:line``; nothing is dropped, so the counts add up to lines x implementations.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import traceback
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

from ..adapters.base import Adapter, AdapterError, Description
from ..adapters.stdio import DEFAULT_START_TIMEOUT_S
from ..implementations.registry import resolve
from ..judging.expectations import Expectations
from ..judging.runner import FixtureResult, RuleTrace, reference_rules, reference_trace, run_fixture
from ..reports.results import apply_expectation, fixture_record
from .aggregate import Aggregate
from .format import CorpusLineError, Trace
from .reading import Split, read_split


@dataclass(frozen=True)
class ReplayTask:
    """Everything a worker needs for one split (picklable, small)."""

    split: Split
    index: int
    impls: tuple[str, ...]
    timeout_s: float
    results_dir: str | None
    only: frozenset[tuple[str, str]] | None = None
    """Rerun: only these (implementation, trace id) pairs; None runs everything."""
    keep: int = 100
    sys_path: tuple[str, ...] = ()
    start_timeout_s: float = DEFAULT_START_TIMEOUT_S
    """Import roots of the driver, so ``module:factory`` resolves on the workers too."""
    level: str = "exact"
    """The level each trace's outcome is judged at (``levels.LEVELS``), as in ``kconform run``."""
    expectations: Expectations | None = None
    """Expected failures by trace id (XFAIL / XPASS) and known differences, as in ``kconform run``."""
    check_progress: bool = False
    """End each trace with a fair suffix and check the PROGRESS-* properties (``--check-progress``)."""


def import_roots() -> tuple[str, ...]:
    """The driver's import path (and working folder) for ``ReplayTask.sys_path``."""
    return tuple(dict.fromkeys([os.getcwd(), *[p for p in sys.path if p]]))


def _extend_path(paths: Iterable[str]) -> None:
    for p in paths:
        if p not in sys.path and os.path.isdir(p):
            sys.path.append(p)


class _Impl:
    """One implementation in a worker: its adapter, started lazily, restarted on errors."""

    def __init__(self, spec: str, timeout_s: float, start_timeout_s: float) -> None:
        self.spec = spec
        self.timeout_s, self.start_timeout_s = timeout_s, start_timeout_s
        self.adapter: Adapter | None = None
        self.description: Description | None = None
        self.failure = ""

    def start(self) -> None:
        try:
            self.adapter = resolve(self.spec, timeout_s=self.timeout_s, start_timeout_s=self.start_timeout_s)
            self.description = self.adapter.describe()
        except AdapterError as exc:
            self.failure = f"describe: {exc.message}"
        except Exception as exc:  # an unknown name or a factory that raises: every trace errors
            self.failure = f"cannot start: {type(exc).__name__}: {exc}"

    def run(
        self,
        trace: Trace,
        rules: RuleTrace | None,
        level: str = "exact",
        expectations: Expectations | None = None,
        progress: bool = False,
    ) -> FixtureResult:
        if self.adapter is None or self.description is None:
            return FixtureResult(self.spec, trace.fixture.id, "errored", reason=self.failure, level=level)
        names = (self.spec, self.description.name)
        known = expectations.known(names) if expectations is not None else None
        result = run_fixture(self.adapter, self.description, trace.fixture, self.spec, rules, level, known, progress)
        apply_expectation(result, expectations, names, trace.fixture)
        if result.outcome == "errored":
            try:
                self.adapter.restart()
            except Exception as exc:
                result.detail = (result.detail + f"\nrestart failed: {exc}").strip()
        return result

    def close(self) -> None:
        if self.adapter is not None:
            with contextlib.suppress(Exception):
                self.adapter.close()


def _rules(trace: Trace) -> RuleTrace | None:
    """The rules the reference fires at each step: stored in the corpus line, or
    recomputed (YAML fixtures, lines from another reference version)."""
    if trace.rules is not None:
        return trace.rules
    try:
        return reference_trace(trace.fixture)
    except Exception:  # a trace the reference itself cannot run: no rules to credit
        return None


def replay_split(task: ReplayTask) -> Aggregate:
    """Replay one split; write its per-trace results; return its totals."""
    _extend_path(task.sys_path)
    agg = Aggregate(keep=task.keep)
    impls = [_Impl(spec, task.timeout_s, task.start_timeout_s) for spec in task.impls]
    out: TextIO | None = None
    part = Path(task.results_dir or ".") / part_name(task.index)
    if task.results_dir is not None:
        Path(task.results_dir).mkdir(parents=True, exist_ok=True)
        out = open(f"{part}{TMP}", "w", encoding="utf-8")  # noqa: SIM115
    try:
        for impl in impls:
            impl.start()
            if impl.description is not None:
                agg.descriptions[impl.spec] = {**impl.description.to_dict()}
        for item in read_split(task.split):
            if isinstance(item, CorpusLineError):
                fixture = _malformed_fixture(item)
                for position, impl in enumerate(impls):
                    if task.only is not None and (impl.spec, fixture["id"]) not in task.only:
                        continue
                    result = FixtureResult(
                        impl.spec, fixture["id"], "errored", reason=f"malformed corpus line: {item}"
                    ).to_dict()
                    result["source"] = f"{item.file}:{item.line}"
                    agg.add_malformed((item.file, item.line, fixture["id"], position), result, fixture)
                    _emit(out, result)
                continue
            fixture = fixture_record(item.fixture)
            fixture["line"] = item.fixture.line
            fixture["provenance"] = item.provenance
            rules: RuleTrace | None = None
            fired: list[str] | None = None
            for position, impl in enumerate(impls):
                if task.only is not None and (impl.spec, item.fixture.id) not in task.only:
                    continue
                if fired is None:
                    rules = _rules(item)
                    fired = reference_rules(item.fixture, rules) if rules is not None else []
                try:
                    result_obj = impl.run(item, rules, task.level, task.expectations, task.check_progress)
                except Exception as exc:  # a runner bug must not lose the trace either
                    result_obj = FixtureResult(
                        impl.spec,
                        item.fixture.id,
                        "errored",
                        reason=f"kconform failed on this trace: {type(exc).__name__}: {exc}",
                        detail=traceback.format_exc(),
                    )
                result_obj.rules = fired
                result = result_obj.to_dict()
                result["source"] = f"{item.fixture.path}:{item.fixture.line}"
                agg.add((item.fixture.path, item.fixture.line, item.fixture.id, position), result, fixture)
                _emit(out, result)
    finally:
        for impl in impls:
            impl.close()
        if out is not None:
            out.close()
    if task.results_dir is not None:  # only a whole split is finished: its results, then its totals
        os.replace(f"{part}{TMP}", part)
        done = done_name(part)
        with open(f"{done}{TMP}", "w", encoding="utf-8") as f:
            json.dump(agg.to_json(), f, separators=(",", ":"), ensure_ascii=False)
        os.replace(f"{done}{TMP}", done)
    return agg


TMP = ".tmp"
"""Suffix of a file still being written; an interrupted replay deletes them."""


def part_name(index: int) -> str:
    """The per-trace results file of split ``index``."""
    return f"part-{index:05d}.jsonl"


def done_name(part: Path) -> Path:
    """The totals of a finished split, beside its results (``part-00003.done.json``):
    present only once the split is complete, so a resume knows what to skip."""
    return part.with_name(part.name.removesuffix(".jsonl") + ".done.json")


def _emit(out: TextIO | None, result: dict[str, Any]) -> None:
    if out is not None:
        out.write(json.dumps(result, separators=(",", ":"), ensure_ascii=False) + "\n")


def _malformed_fixture(error: CorpusLineError) -> dict[str, Any]:
    name = f"{Path(error.file).name}:{error.line}"
    return {
        "id": name,
        "base_id": name,
        "title": "malformed corpus line",
        "source": error.file,
        "tags": [],
        "rules": [],
        "generation": "",
        "group": "malformed",
        "path": error.file,
        "steps": 0,
        "config": {},
    }
