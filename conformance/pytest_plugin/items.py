"""The pytest items of kconform's plugin (``pytest_plugin.py``): one per fixture case,
plus the optional fuzz items. Imported only when an implementation is named."""

from __future__ import annotations

import contextlib
import json
from pathlib import Path
from typing import Any

import pytest
from tabulate import tabulate

from ..adapters.base import Adapter, AdapterError, Description, StepResult
from ..fixtures.loading import Fixture, load_fixtures
from ..implementations.registry import UnknownImplementation, resolve
from ..judging.expectations import Expectations, load_expectations
from ..judging.runner import FixtureResult, RuleTrace, reference_rules, reference_trace, run_fixture
from ..reports import views
from ..reports.results import apply_expectation, fixture_record
from .settings import Settings


class KconformSession:
    """The fixtures, expectations and adapters of one pytest run (one per xdist worker)."""

    def __init__(self, settings: Settings, config: pytest.Config | None = None) -> None:
        self.settings = settings
        self.config = config
        fixtures, problems = load_fixtures(settings.fixture_paths)
        if problems:
            raise pytest.UsageError("kconform: invalid fixtures:\n" + "\n".join(str(p) for p in problems))
        self.fixtures = fixtures
        expectations, problems = load_expectations(settings.expectation_paths)
        if problems:
            raise pytest.UsageError("kconform: invalid expectations:\n" + "\n".join(str(p) for p in problems))
        self.expectations: Expectations = expectations
        self.level = settings.level or "exact"
        self.adapters: dict[str, Adapter] = {}
        self.descriptions: dict[int, Description] = {}
        self.traces: dict[str, RuleTrace] = {}

    def marker_names(self) -> list[str]:
        names = {t for f in self.fixtures for t in f.tags} | {f.generation.value for f in self.fixtures}
        return sorted(names)

    @pytest.hookimpl(tryfirst=True)
    def pytest_collection_modifyitems(self, session: pytest.Session, items: list[pytest.Item]) -> None:
        for impl in self.settings.impls:
            self.check_name(impl, session)
        for impl in self.settings.impls:
            collector = KconformCollector.from_parent(
                session, name=f"kconform[{impl}]", nodeid=f"kconform[{impl}]", impl=impl, plugin=self
            )
            collected = collector.collect()
            items.extend(collected)
            # counted as collected (``pytest --co`` says N tests collected), as a collector of a file is
            report = pytest.CollectReport(
                collector.nodeid, "passed", None, list[pytest.Item | pytest.Collector](collected)
            )
            session.config.hook.pytest_collectreport(report=report)

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        """Name kconform items in JUnit XML as pytest 9.2 does (``classname="kconform[IMPL]"``,
        ``name="FIXTURE/GENERATION"``): pytest before 9.2 cuts a node id at its first ``[``
        and wrote an empty classname. Set as the item's own XML attributes, which pytest
        keeps over its computed ones (also on the xdist controller, where the XML is written)."""
        if not report.nodeid.startswith("kconform["):
            return
        xml = _junit_xml(self.config) if self.config is not None else None
        if xml is None:
            return
        classname, _, name = report.nodeid.partition("::")
        reporter = xml.node_reporter(report)
        reporter.add_attribute("classname", classname)
        reporter.add_attribute("name", name)

    def check_name(self, impl: str, session: pytest.Session) -> None:
        """A name that is neither an implementation nor a pytest fixture is one usage error
        (as ``kconform run`` says it), not an error in every case's setup."""
        if impl.isidentifier() and _is_fixture(session, impl):
            return
        if impl in self.adapters:
            return
        try:
            self.adapters[impl] = resolve(impl, timeout_s=self.settings.timeout_s)
        except UnknownImplementation as exc:
            hint = " (or a pytest fixture of that name)" if impl.isidentifier() else ""
            raise pytest.UsageError(f"kconform: --kconform-impl {exc}{hint}") from None

    def pytest_sessionfinish(self) -> None:
        for adapter in self.adapters.values():
            try:
                adapter.close()
            except Exception as exc:  # closing must not hide the results
                print(f"kconform: closing an implementation failed: {exc}")

    # --- adapters --------------------------------------------------------------------

    def adapter(self, impl: str, request: pytest.FixtureRequest) -> Adapter:
        """The implementation's adapter: a pytest fixture of that name, else ``resolve``."""
        if impl.isidentifier():
            try:
                value = request.getfixturevalue(impl)
            except pytest.FixtureLookupError:
                value = None
            if value is not None:
                if not isinstance(value, Adapter):
                    raise pytest.UsageError(
                        f"kconform: fixture {impl!r} returned {type(value).__name__}, not an Adapter"
                    )
                return value
        if impl not in self.adapters:
            try:
                self.adapters[impl] = resolve(impl, timeout_s=self.settings.timeout_s)
            except UnknownImplementation as exc:
                raise pytest.UsageError(f"kconform: {exc} (or a pytest fixture of that name)") from None
        return self.adapters[impl]

    def describe(self, adapter: Adapter) -> Description:
        if id(adapter) not in self.descriptions:
            self.descriptions[id(adapter)] = adapter.describe()
        return self.descriptions[id(adapter)]

    def trace(self, fixture: Fixture) -> RuleTrace:
        """The rules the reference fires at each step (named at a divergent step)."""
        if fixture.id not in self.traces:
            self.traces[fixture.id] = reference_trace(fixture)
        return self.traces[fixture.id]


def _junit_xml(config: pytest.Config) -> Any:
    """pytest's JUnit XML writer of this run, or None (not asked for, or pytest changed)."""
    try:
        from _pytest.junitxml import xml_key
    except ImportError:
        return None
    return config.stash.get(xml_key, None)


def _is_fixture(session: pytest.Session, name: str) -> bool:
    """Whether a pytest fixture of this name is defined anywhere in the session (a
    ``conftest.py`` or a plugin): then the implementation is that fixture's value."""
    manager = getattr(session, "_fixturemanager", None)
    try:  # None: no fixture of that name anywhere (pytest 8 and 9)
        return manager.getfixturedefs(name, session) is not None  # type: ignore[union-attr]
    except Exception:  # pytest's internals changed: leave the question to setup time
        return True


class KconformCollector(pytest.Collector):
    """All the cases of one implementation."""

    def __init__(self, *, impl: str, plugin: KconformSession, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.impl = impl
        self.plugin = plugin

    def collect(self) -> list[pytest.Item]:
        items: list[pytest.Item] = []
        for fixture in self.plugin.fixtures:
            name = f"{fixture.base_id}/{fixture.generation.value}"
            item = KconformCase.from_parent(self, name=name, callobj=_case_body, fixture=fixture)
            for marker in ("kconform", *fixture.tags, fixture.generation.value):
                item.add_marker(marker)
            items.append(item)
        if self.plugin.settings.fuzz_examples > 0:
            generations = dict.fromkeys(f.generation.value for f in self.plugin.fixtures)
            for generation in generations or ("leader-epoch",):
                fuzz_item = KconformFuzz.from_parent(
                    self, name=f"fuzz/{generation}", callobj=_case_body, generation=generation
                )
                fuzz_item.add_marker("kconform")
                fuzz_item.add_marker(generation)
                items.append(fuzz_item)
        return items


def _case_body(request: pytest.FixtureRequest) -> None:
    """The callable behind every kconform item (the work happens in the item)."""


class CaseError(Exception):
    """The implementation could not answer (kconform: errored); reported as is."""


class CaseFailure(AssertionError):
    """kconform failure report for a case; reported as is."""


class KconformCase(pytest.Function):
    """One fixture case on one implementation."""

    def __init__(self, *, fixture: Fixture, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.fixture = fixture
        self.result: FixtureResult | None = None

    @property
    def collector(self) -> KconformCollector:
        parent = self.parent
        assert isinstance(parent, KconformCollector)
        return parent

    def setup(self) -> None:
        __tracebackhide__ = True  # an errored case shows kconform's report, not this frame
        super().setup()
        plugin, impl = self.collector.plugin, self.collector.impl
        adapter = plugin.adapter(impl, self._request)
        try:
            description = plugin.describe(adapter)
        except AdapterError as exc:  # every case of this implementation errors, each saying why
            raise CaseError(f"kconform: {impl} cannot describe itself: {exc.message}\n{exc.detail}".strip()) from None
        trace = plugin.trace(self.fixture)
        names = (impl, description.name)
        known = plugin.expectations.known(names)
        result = run_fixture(adapter, description, self.fixture, impl, trace, level=plugin.level, known=known)
        result.rules = reference_rules(self.fixture, trace)
        apply_expectation(result, plugin.expectations, names, self.fixture)
        self.result = result
        if result.outcome == "errored":
            try:
                adapter.restart()
            except Exception as exc:
                result.detail = (result.detail + f"\nrestart failed: {exc}").strip()
        self.user_properties.append(("kconform_status", result.status))
        if result.outcome == "skipped":  # located at the fixture file, as a skip marker is
            raise pytest.skip.Exception(result.reason, _use_item_location=True)
        if result.outcome == "errored":
            if result.expected == "fail":
                pytest.xfail(f"expected failure: {result.expected_reason} ({result.reason})")
            raise CaseError(failure_report(self.fixture, result))

    def runtest(self) -> None:
        result = self.result
        assert result is not None, "setup did not run"
        if result.outcome == "failed":
            if result.expected == "fail":
                pytest.xfail(f"expected failure: {result.expected_reason}")
            raise CaseFailure(failure_report(self.fixture, result))
        if result.expected == "fail":
            raise CaseFailure(f"[XPASS] {self.name} passed but is expected to fail: {result.expected_reason}")

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException]) -> Any:  # type: ignore[override]
        if isinstance(excinfo.value, CaseError | CaseFailure):
            return str(excinfo.value)
        return super().repr_failure(excinfo)

    def reportinfo(self) -> tuple[Path, int, str]:
        return Path(self.fixture.path), self.fixture.line - 1, f"kconform {self.collector.impl}: {self.fixture.id}"


def failure_report(fixture: Fixture, result: FixtureResult) -> str:
    """The text ``kconform run`` prints for this failure: where it diverged, field by
    field, with the fixture's words and the rules it exercises."""
    doc = {"fixtures": [fixture_record(fixture)], "results": [result.to_dict()]}
    lines = [f"kconform: {result.implementation} / {result.fixture}: {result.status}"]
    if result.outcome != "errored":  # an errored case's table starts with its reason
        lines.append(result.reason)
    for table in views.failures(doc, include_expected=True):
        lines += ["", tabulate(table.rows, headers=table.headers, tablefmt="simple", disable_numparse=True)]
        if table.note:
            lines += ["", table.note]
    d = result.divergence or {}
    if d.get("why") and not any("step says" in line for line in lines):
        lines.append(f"why: {d['why'].strip()}")
    if d.get("rules"):
        lines.append(f"rules the reference fires at this step: {' '.join(d['rules'])}")
    if result.rules:
        lines.append(f"rules this fixture exercises: {' '.join(result.rules)}")
    lines.append(f"explain: kconform explain {fixture.path}")
    return "\n".join(line for line in lines if line is not None)


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" + ("" if n == 1 else "s")


def _witness_report(plugin: KconformSession, impl: str, adapter: Adapter, description: Description, path: Path) -> str:
    """The witness replayed as a fixture case: the field, expected and observed values of
    the divergence, as a fixture case's failure says them (empty if it does not fail
    again as a fixture, e.g. a difference only the fuzzer's comparison sees)."""
    from ..fixtures.loading import FixtureError, load_fixture_file

    try:
        fixtures = load_fixture_file(path)
    except FixtureError:
        return ""
    parts = []
    for fixture in fixtures:
        trace = plugin.trace(fixture)
        result = run_fixture(_Unclosable(adapter), description, fixture, impl, trace, level=plugin.level)
        if result.outcome in ("failed", "errored"):
            result.rules = reference_rules(fixture, trace)
            parts.append(failure_report(fixture, result))
            with contextlib.suppress(Exception):
                adapter.restart()
    return "\n" + "\n".join(parts) if parts else ""


class _Unclosable(Adapter):
    """An adapter shared with the other items: the fuzz run must not close it."""

    def __init__(self, inner: Adapter) -> None:
        self.inner = inner

    def describe(self) -> Description:
        return self.inner.describe()

    def reset(self, config: dict[str, Any], initial: dict[str, Any] | None = None) -> None:
        self.inner.reset(config, initial) if initial is not None else self.inner.reset(config)

    def step(self, step: dict[str, Any]) -> StepResult:
        return self.inner.step(step)

    @property
    def pipelining(self) -> bool:
        """The inner adapter's (``judging.ahead.pipelines``): steps go ahead through this one too."""
        return getattr(self.inner, "pipelining", False) is True

    def send_ahead(self, step: dict[str, Any]) -> bool:
        return self.inner.send_ahead(step)

    def restart(self) -> None:
        self.inner.restart()


class KconformFuzz(pytest.Function):
    """Random differential runs against the reference (``kconform fuzz``) as one item."""

    def __init__(self, *, generation: str, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.generation = generation

    def runtest(self) -> None:
        from reference_impl import Generation

        from ..search.stateful import fuzz, witness_fixture

        parent = self.parent
        assert isinstance(parent, KconformCollector)
        plugin = parent.plugin
        adapter = plugin.adapter(parent.impl, self._request)
        description = plugin.describe(adapter)
        if self.generation not in description.generations:
            pytest.skip(f"generation {self.generation} not supported")
        settings = plugin.settings
        trace = fuzz(
            _Unclosable(adapter),
            Generation(self.generation),
            settings.fuzz_examples,
            settings.fuzz_steps,
            derandomize=True,
            level=plugin.level,
            ignore=plugin.expectations.known((parent.impl, description.name)),
        )
        if trace is None:
            return
        witness = witness_fixture(trace)
        folder = settings.witness_dir or self.config.rootpath / "out"
        name = "".join(c if c.isalnum() or c in "-_." else "_" for c in parent.impl)
        out = folder / f"kconform-fuzz-{name}-{self.generation}.yaml"
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(witness, encoding="utf-8")
        steps = "\n".join(f"  {json.dumps(s)}" for s in trace.steps)
        raise CaseFailure(
            f"kconform fuzz: {parent.impl} fails level {plugin.level} ({self.generation}) after "
            f"{_plural(len(trace.steps), 'step')} (shrunk):\n{steps}\n"
            + _witness_report(plugin, parent.impl, adapter, description, out)
            + f"\nwitness fixture: {out}\nreplay: pytest --kconform-impl={parent.impl} "
            f"--kconform-level={plugin.level} --kconform-fixtures={out}"
        )

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException]) -> Any:  # type: ignore[override]
        if isinstance(excinfo.value, CaseFailure):
            return str(excinfo.value)
        return super().repr_failure(excinfo)

    def reportinfo(self) -> tuple[Path, int, str]:
        return Path("kconform"), 0, f"kconform fuzz {self.name}"
