"""Failure records carry the expected and observed state at the divergent step, and the
HTML report draws them side by side."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from typing import Any

import pytest
from helpers import bundled_fixtures

from conformance.fixtures.loading import Fixture
from conformance.judging.step_states import reference_observation
from conformance.reports import html, junit
from conformance.reports.diagrams.report import divergence_figure
from conformance.reports.results import Implementation, run_suite
from conformance.zoo.truncation import HwTruncationOnRestartUnderEpochs
from reference_impl import apply, observe

FIXTURE = "seed-05a-data-loss-leader-epoch"


@pytest.fixture(scope="module")
def failing_run() -> tuple[Fixture, dict[str, Any]]:
    """A mutant that truncates to its HW on restart (HW truncation kept under leader epochs)."""
    fixture = next(f for f in bundled_fixtures() if f.id == FIXTURE)
    mutant = HwTruncationOnRestartUnderEpochs("truncate-on-restart")
    doc = run_suite([Implementation("truncate-on-restart", mutant)], [fixture])
    return fixture, doc


def test_reference_observation_is_the_state_after_that_step() -> None:
    fixture = next(f for f in bundled_fixtures() if f.id == FIXTURE)
    state = fixture.start()
    for fs in fixture.steps[:4]:
        state = apply(state, fs.step)
    assert reference_observation(fixture, 3) == observe(state)


def test_failure_record_carries_both_states(failing_run: tuple[Fixture, dict[str, Any]]) -> None:
    fixture, doc = failing_run
    (record,) = doc["results"]
    assert record["status"] == "FAIL"
    d = record["divergence"]
    assert d["expected_state"] == reference_observation(fixture, d["step"] - 1)  # steps count from 1
    observed = d["observed_state"]
    field = d["field"]  # e.g. replicas.B.log
    parts = field.split(".")
    value: Any = observed
    for part in parts:
        value = value[part]
    assert value == d["actual"]


def test_html_report_draws_expected_and_observed_side_by_side(failing_run: tuple[Fixture, dict[str, Any]]) -> None:
    _, doc = failing_run
    page = html.render(doc)
    d = doc["results"][0]["divergence"]
    assert page.count("<svg") == 2
    assert f"expected (reference) after step {d['step']}</figcaption>" in page
    assert f"observed (truncate-on-restart) after step {d['step']}</figcaption>" in page
    figure = divergence_figure(doc["results"][0])
    svgs = [ET.fromstring("<svg" + part.split("</figure>")[0]) for part in figure.split("<svg")[1:]]
    assert d["field"] == "replicas.B.leo"
    for svg in svgs:  # the diverging field is red in both pictures, and only that one
        red = [t.text for t in svg.iter("text") if t.get("fill") == "#d00000"]
        assert len(red) == 1 and red[0] is not None and red[0].startswith("LEO="), red
    expected_leo, observed_leo = (int(str(s.text).split("=")[1]) for svg in svgs for s in _red_texts(svg))
    assert (expected_leo, observed_leo) == (d["expected"], d["actual"])


def _red_texts(svg: ET.Element) -> list[ET.Element]:
    return [t for t in svg.iter("text") if t.get("fill") == "#d00000"]


def test_junit_leaves_the_states_out(failing_run: tuple[Fixture, dict[str, Any]]) -> None:
    _, doc = failing_run
    xml = junit.render(doc)
    assert "expected_state" not in xml and "observed_state" not in xml and "replicas.B" in xml


def test_records_without_states_render_without_pictures(failing_run: tuple[Fixture, dict[str, Any]]) -> None:
    _, doc = failing_run
    old = {
        **doc,
        "results": [
            {**r, "divergence": {k: v for k, v in r["divergence"].items() if "state" not in k}} for r in doc["results"]
        ],
    }
    page = html.render(old)
    assert "<svg" not in page and "Failures" in page
