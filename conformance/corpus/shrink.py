"""Failing traces cut down to small YAML fixtures, ready for ``kconform run``.

A candidate is a list of steps from the failing trace. Its expectation is re-derived from
the reference (the reference's whole observation after the last step; a candidate the
reference refuses is dropped), and it is kept while the implementation still fails it.
First the shortest failing prefix is found, then chunks and single steps are removed
while the failure holds (delta debugging, within a budget of runs). The result fails the
implementation and passes the reference by construction.
"""

from __future__ import annotations

import gzip
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from reference_impl import Config, StepRejected, apply, initial_state, observe, step_from_dict

from ..adapters.base import Adapter, Description
from ..fixtures.loading import Fixture, FixtureStep, load_fixture_file
from ..fixtures.writing import fixture_yaml as write_fixture
from ..implementations.registry import resolve
from ..judging.expectations import Expectations
from ..judging.runner import run_fixture
from .aggregate import Aggregate
from .format import Trace, parse_line

BUDGET = 400
"""Candidate runs per trace at most."""


def candidate(
    config: Config, dos: Sequence[dict[str, Any]], trace_id: str, initial: dict[str, Any] | None = None
) -> Fixture | None:
    """``dos`` as a fixture (from the given ``initial`` state, if any) expecting the
    reference's observation after the last step; None if the reference refuses one of the steps."""
    state = initial_state(config, initial)
    steps = []
    for i, do in enumerate(dos):
        step = step_from_dict(do)
        try:
            state = apply(state, step)
        except StepRejected:
            return None
        last = i == len(dos) - 1
        steps.append(FixtureStep(i, step, dict(do), observe(state) if last else None, None, None, None, i + 1))
    return Fixture(
        id=trace_id,
        base_id=trace_id,
        title="shrunk",
        source="shrunk",
        description="",
        tags=(),
        rules=(),
        generation=config.generation,
        config=config,
        steps=tuple(steps),
        path="(shrinking)",
        initial=initial,
    )


def shrink(
    trace: Trace,
    adapter: Adapter,
    description: Description,
    impl: str,
    budget: int = BUDGET,
    level: str = "exact",
    known: Mapping[str, str] | None = None,
) -> Fixture | None:
    """The smallest failing candidate found (failing at ``level``, as the replay judged), or
    None if no candidate fails."""
    config = trace.fixture.config
    dos = [fs.do for fs in trace.fixture.steps]
    runs = 0

    def fails(steps: Sequence[dict[str, Any]]) -> Fixture | None:
        nonlocal runs
        runs += 1
        fixture = candidate(config, steps, trace.fixture.id, trace.fixture.initial)
        if fixture is None:
            return None
        result = run_fixture(adapter, description, fixture, impl, level=level, known=known)
        if result.outcome == "errored":
            adapter.restart()
        return fixture if result.outcome == "failed" else None

    best: Fixture | None = None
    for k in range(1, len(dos) + 1):
        found = fails(dos[:k])
        if found is not None:
            best, dos = found, dos[:k]
            break
    if best is None:
        return None
    chunk = max(1, len(dos) // 2)
    while chunk >= 1 and runs < budget:
        i, removed = 0, False
        while i < len(dos) and runs < budget:
            trial = dos[:i] + dos[i + chunk :]
            found = fails(trial) if trial else None
            if found is not None:
                best, dos, removed = found, trial, True
            else:
                i += chunk
        if not removed:
            chunk //= 2
    return best


def fixture_yaml(fixture: Fixture, impl: str, origin: str, reason: str) -> str:
    """A shrunk candidate (``candidate``: the reference accepts every step and its
    observation after the last is expected) as a fixture file."""
    return write_fixture(
        _fixture_id(fixture.id),
        f"{impl} disagrees with the reference (shrunk from corpus trace {fixture.id})",
        source=origin,
        description=f"Shrunk by kconform replay --save-failures. The original failure: {reason}",
        tags=["corpus", "shrunk"],
        config=fixture.config,
        initial=fixture.initial,
        steps=[fs.do for fs in fixture.steps],
        expect=fixture.steps[-1].expect,
    )


def _fixture_id(trace_id: str) -> str:
    return re.sub(r"[^a-z0-9.-]", "-", trace_id.lower()).strip("-.") or "trace"


def read_trace(path: str, line: int, trace_id: str) -> Trace | None:
    """Read one trace back from its corpus file."""
    if path.endswith((".yaml", ".yml")):
        for fixture in load_fixture_file(Path(path)):
            if fixture.id == trace_id:
                return Trace(fixture, None, {})
        return None
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rb") as f:
        for n, raw in enumerate(f, start=1):
            if n == line:
                return parse_line(raw, path, line)
    return None


def save_failures(
    agg: Aggregate,
    out: Path,
    limit: int,
    timeout_s: float,
    start_timeout_s: float,
    level: str = "exact",
    expectations: Expectations | None = None,
) -> list[Path]:
    """Shrink the first ``limit`` failed traces (at ``level``) and write them under ``out/IMPL/``."""
    adapters: dict[str, tuple[Adapter, Description]] = {}
    written: list[Path] = []
    try:
        for _, result, fixture_record in agg.first:
            if len(written) >= limit:
                break
            if result["outcome"] != "failed":
                continue
            impl = result["implementation"]
            trace = read_trace(fixture_record["path"], fixture_record.get("line", 0), result["fixture"])
            if trace is None:
                continue
            if impl not in adapters:
                adapter = resolve(impl, timeout_s=timeout_s, start_timeout_s=start_timeout_s)
                adapters[impl] = (adapter, adapter.describe())
            adapter, description = adapters[impl]
            known = expectations.known((impl, description.name)) if expectations is not None else None
            small = shrink(trace, adapter, description, impl, level=level, known=known)
            if small is None:
                continue
            folder = out / _fixture_id(impl)
            folder.mkdir(parents=True, exist_ok=True)
            path = folder / f"{_fixture_id(trace.fixture.id)}.yaml"
            origin = f"{fixture_record['path']}:{fixture_record.get('line', '')}"
            path.write_text(fixture_yaml(small, impl, origin, result["reason"]), encoding="utf-8")
            written.append(path)
    finally:
        for adapter, _ in adapters.values():
            adapter.close()
    return written
