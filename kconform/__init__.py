"""kconform's public, typed API: run the conformance suite from your own Python code.

Everything here is re-exported from ``conformance`` and ``reference_impl``; import it
from ``kconform`` so your code keeps working when those modules are reorganised. The
package ships ``py.typed`` and passes ``mypy --strict`` (docs/api.md has an example).

The pieces, in the order a run uses them:

- fixtures: ``load_fixtures`` (with ``BUNDLED_FIXTURES``), ``Fixture``, ``Problem``;
- implementations: the ``Adapter`` seam, ``FunctionAdapter`` (three functions over your
  own state), ``ReferenceAdapter``, ``StdioAdapter``, ``resolve`` (a name as on the
  command line), ``Description`` and ``StepResult``;
- runs: ``run_suite`` over ``Implementation`` records (optionally with
  ``load_expectations``) returns the results document (``ResultsDocument``); ``run_fixture``
  gives one ``FixtureResult``;
- reports: ``render`` (any of ``REPORT_FORMATS``) or ``render_terminal`` /
  ``render_markdown`` / ``render_html`` / ``render_junit``; ``write_document``,
  ``load_document``, ``diff_documents``, ``unexpected_count``, ``status_counts``;
- pictures: ``explain`` (a fixture as a step table), ``Frame``, ``step_svg``,
  ``strip_svg`` (diagrams of observations).
"""

from __future__ import annotations

from collections import Counter
from typing import Any, TypeAlias

from conformance.adapters.base import PROTOCOL_VERSION, Adapter, AdapterError, Description, StepResult
from conformance.adapters.in_process import FunctionAdapter, ReferenceAdapter, StepRefused
from conformance.adapters.stdio import StdioAdapter
from conformance.fixtures.loading import Fixture, FixtureError, FixtureStep, Problem, load_fixtures
from conformance.fixtures.paths import FIXTURES_DIR as BUNDLED_FIXTURES
from conformance.implementations.registry import ImplementationUnavailable, UnknownImplementation, resolve
from conformance.judging.expectations import Expectations, load_expectations
from conformance.judging.runner import OUTCOMES, FixtureResult, run_fixture
from conformance.reports import FORMATS as REPORT_FORMATS
from conformance.reports import render
from conformance.reports.diagrams import Frame, step_svg, strip_svg
from conformance.reports.explain import explain
from conformance.reports.html import render as render_html
from conformance.reports.junit import render as render_junit
from conformance.reports.results import (
    Implementation,
    ResultsError,
    diff_documents,
    load_document,
    run_suite,
    unexpected_count,
    write_document,
)
from conformance.reports.text import markdown as render_markdown
from conformance.reports.text import terminal as render_terminal
from reference_impl import Config, Generation, __version__

ResultsDocument: TypeAlias = dict[str, Any]
"""The JSON-ready document ``run_suite`` returns and every report renders (docs/reports.md)."""

STATUSES = ("PASS", "FAIL", "ERROR", "SKIP", "XFAIL", "XPASS")


def status_counts(document: ResultsDocument) -> dict[str, int]:
    """How many results have each status (``PASS``, ``FAIL``, ...; zero ones included)."""
    counts = Counter(str(r["status"]) for r in document["results"])
    return {status: counts[status] for status in STATUSES}


__all__ = [
    "BUNDLED_FIXTURES",
    "OUTCOMES",
    "PROTOCOL_VERSION",
    "REPORT_FORMATS",
    "STATUSES",
    "Adapter",
    "AdapterError",
    "Config",
    "Description",
    "Expectations",
    "Fixture",
    "FixtureError",
    "FixtureResult",
    "FixtureStep",
    "Frame",
    "FunctionAdapter",
    "Generation",
    "Implementation",
    "ImplementationUnavailable",
    "Problem",
    "ReferenceAdapter",
    "ResultsDocument",
    "ResultsError",
    "StdioAdapter",
    "StepRefused",
    "StepResult",
    "UnknownImplementation",
    "__version__",
    "diff_documents",
    "explain",
    "load_document",
    "load_expectations",
    "load_fixtures",
    "render",
    "render_html",
    "render_junit",
    "render_markdown",
    "render_terminal",
    "resolve",
    "run_fixture",
    "run_suite",
    "status_counts",
    "step_svg",
    "strip_svg",
    "unexpected_count",
    "write_document",
]
