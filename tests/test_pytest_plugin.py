"""The pytest plugin: kconform cases as pytest items, with the same outcomes as
``kconform run``. The example project in examples/pytest-project is run here, as CI runs
it, and its JUnit XML is compared case by case with kconform's own results."""

from __future__ import annotations

import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import kconform
from conformance import pytest_plugin
from conformance.adapters import stdio
from conformance.fixtures.paths import FIXTURES_DIR

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "examples" / "pytest-project"
SEEDS = ROOT / "fixtures" / "seeds"
BROKEN = f"exec:{sys.executable} {ROOT / 'tests' / 'fakes' / 'broken_adapter.py'}"


def run_pytest(cwd: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, **(env or {})},
    )


def run_kconform(impl: str, fixtures: Path, expectations: Path | None = None) -> tuple[dict[str, Any], ET.Element]:
    """``kconform run --impl IMPL --fixtures F [--expectations E]``, in process: its results
    document and its JUnit XML."""
    loaded, problems = kconform.load_fixtures([fixtures])
    assert not problems
    expected, problems = kconform.load_expectations([expectations] if expectations else [])
    assert not problems
    document = kconform.run_suite([kconform.Implementation(impl, kconform.resolve(impl))], loaded, expected)
    return document, ET.fromstring(kconform.render_junit(document).split("\n", 1)[1])


@pytest.fixture(scope="module")
def example_run() -> Iterator[tuple[dict[str, Any], ET.Element]]:
    """kconform's own run of the example project's adapter over the bundled fixtures."""
    sys.path.insert(0, str(EXAMPLE))
    try:
        yield run_kconform("kconform_adapter:adapter", FIXTURES_DIR, EXAMPLE / "kconform-expectations.yaml")
    finally:
        sys.path.remove(str(EXAMPLE))
        for name in ("kconform_adapter", "my_broker"):
            sys.modules.pop(name, None)


def pytest_statuses(junit: Path) -> dict[str, str]:
    """kconform items of a pytest JUnit file: ``fixture/generation`` -> kconform status."""
    out = {}
    for case in ET.parse(junit).getroot().iter("testcase"):
        if not case.get("classname", "").startswith("kconform["):
            continue
        skipped = case.find("skipped")
        if case.find("failure") is not None:
            status = "FAIL"
        elif case.find("error") is not None:
            status = "ERROR"
        elif skipped is not None:
            status = "XFAIL" if skipped.get("type") == "pytest.xfail" else "SKIP"
        else:
            status = "PASS"
        out[case.get("name", "")] = status
    return out


def kconform_statuses(document: dict[str, Any]) -> dict[str, str]:
    fixtures = {f["id"]: f for f in document["fixtures"]}
    return {
        f"{fixtures[r['fixture']]['base_id']}/{fixtures[r['fixture']]['generation']}": r["status"]
        for r in document["results"]
    }


def junit_totals(root: ET.Element) -> tuple[int, int, int, int]:
    suite = root if root.tag == "testsuite" else root.find("testsuite")
    assert suite is not None
    return tuple(int(suite.get(k, "0")) for k in ("tests", "failures", "errors", "skipped"))  # type: ignore[return-value]


def test_example_project_passes_fails_skips_and_xfails_as_kconform_does(
    tmp_path: Path, example_run: tuple[dict[str, Any], ET.Element]
) -> None:
    junit = tmp_path / "pytest.xml"
    done = run_pytest(EXAMPLE, f"--junitxml={junit}", "-rfEsx")
    assert done.returncode == 1, done.stdout + done.stderr  # one real failure
    statuses = pytest_statuses(junit)
    counts = Counter(statuses.values())
    assert counts["PASS"] > 0 and counts["SKIP"] > 0
    assert counts["FAIL"] == 1 and counts["XFAIL"] == 27 and counts["ERROR"] == 0
    assert statuses["seed-08b-unclean-election-enabled/leader-epoch"] == "FAIL"
    assert statuses["seed-09-isr-shrink-expand/leader-epoch"] == "XFAIL"
    # the failure text is kconform's failure report
    assert "kconform: my_broker_adapter / seed-08b-unclean-election-enabled: FAIL" in done.stdout
    # first the known acks=all gap (SAFE-ACK-COMMITTED at the produce), then the unclean election at step 9
    assert "step 5 (produce)" in done.stdout and "safety property SAFE-ACK-COMMITTED violated" in done.stdout
    assert "also diverges at steps 9," in done.stdout
    assert "generation hw-truncation not supported" in done.stdout  # skip reasons from capabilities
    # fixtures with a consume step run without it (coarsening), so the acks defect shows in 16
    document, kconform_junit = example_run
    seen = Counter(kconform_statuses(document).values())  # passed: kconform's + 1 own test
    summary = f"1 failed, {seen['PASS'] + 1} passed, {seen['SKIP']} skipped, 27 xfailed"
    assert summary in done.stdout
    assert f"\n{summary}\n" in (EXAMPLE / "README.md").read_text(encoding="utf-8"), "the README states the run's counts"
    assert statuses == kconform_statuses(document)
    pytest_root = ET.parse(junit).getroot()
    own_tests = 1
    tests, failures, errors, skipped = junit_totals(pytest_root)
    assert (tests - own_tests, failures, errors, skipped) == junit_totals(kconform_junit)


def test_errored_cases_are_pytest_errors_as_kconform_counts_them(tmp_path: Path) -> None:
    fixtures = str(SEEDS / "01-normal-round.yaml")
    impl = f"{BROKEN} crash-on-third-step"
    junit = tmp_path / "pytest.xml"
    done = run_pytest(tmp_path, f"--junitxml={junit}", "--kconform-impl", impl, f"--kconform-fixtures={fixtures}")
    assert done.returncode == 1, done.stdout + done.stderr
    statuses = pytest_statuses(junit)
    assert set(statuses.values()) == {"ERROR"} and len(statuses) == 3
    document, kconform_junit = run_kconform(impl, Path(fixtures))
    assert statuses == kconform_statuses(document)
    assert junit_totals(ET.parse(junit).getroot()) == junit_totals(kconform_junit)


def test_markers_select_by_tag_and_generation(tmp_path: Path) -> None:
    args = ["--collect-only", "-q", "--kconform-impl", "reference", f"--kconform-fixtures={SEEDS}"]
    done = run_pytest(tmp_path, *args, "-m", "kconform and data-loss and leader-epoch", "--kconform-level=exact")
    ids = {line for line in done.stdout.splitlines() if line.startswith("kconform[")}
    fixtures, _ = kconform.load_fixtures([SEEDS])
    expected = {
        f"kconform[reference]::{f.base_id}/{f.generation.value}"
        for f in fixtures
        if "data-loss" in f.tags and f.generation.value == "leader-epoch"
    }
    assert expected and ids == expected, done.stdout


def test_the_plugin_adds_nothing_unless_an_implementation_is_named(tmp_path: Path) -> None:
    (tmp_path / "test_one.py").write_text("def test_one():\n    pass\n", encoding="utf-8")
    done = run_pytest(tmp_path, "--collect-only", "-q")
    assert "1 test collected" in done.stdout, done.stdout


def test_the_level_is_the_runners(tmp_path: Path) -> None:
    """--kconform-level judges as kconform run --level does: a correct implementation with
    another timing passes at settled, and an HW that goes backwards fails at safety."""
    fixture = f"--kconform-fixtures={SEEDS / '02-purgatory.yaml'}"
    settled = run_pytest(
        tmp_path, "-q", "--kconform-impl", "shape-early-answer", fixture, "--kconform-level", "settled"
    )
    assert settled.returncode == 0, settled.stdout
    exact = run_pytest(tmp_path, "-q", "--kconform-impl", "shape-early-answer", fixture, "--kconform-level", "exact")
    assert exact.returncode == 1, exact.stdout
    unsafe = run_pytest(
        tmp_path,
        "-q",
        "--kconform-impl",
        "shape-hw-decrease",
        f"--kconform-fixtures={SEEDS}",
        "--kconform-level",
        "safety",
    )
    assert unsafe.returncode == 1 and "SAFE-" in unsafe.stdout, unsafe.stdout


def test_the_plugins_default_timeout_is_the_stdio_adapters() -> None:
    assert pytest_plugin.DEFAULT_TIMEOUT_S == stdio.DEFAULT_TIMEOUT_S


def test_fuzz_item_finds_my_brokers_acks_defect_and_writes_a_witness(tmp_path: Path) -> None:
    done = run_pytest(EXAMPLE, "--kconform-fuzz", "5", "-k", "fuzz", f"--kconform-witness-dir={tmp_path}")
    assert "kconform fuzz: my_broker_adapter fails level exact (leader-epoch)" in done.stdout, done.stdout
    # assertion-style: the field with its expected and observed values, and a replay line that works as given
    assert "producer.p1: expected 'pending', got 'acked'" in done.stdout, done.stdout
    assert f"--kconform-impl=my_broker_adapter --kconform-level=exact --kconform-fixtures={tmp_path}" in done.stdout
    assert "1 failed, 2 skipped" in done.stdout  # hw-truncation, diverging-epoch: not supported
    witness = tmp_path / "kconform-fuzz-my_broker_adapter-leader-epoch.yaml"
    assert witness.is_file()
    replay = run_pytest(EXAMPLE, f"--kconform-fixtures={witness}", "-q", "-k", "kconform")
    assert "1 failed" in replay.stdout, replay.stdout


def test_xdist_runs_the_same_cases(tmp_path: Path, example_run: tuple[dict[str, Any], ET.Element]) -> None:
    pytest.importorskip("xdist", reason="pytest-xdist is not installed")
    junit = tmp_path / "parallel.xml"
    run_pytest(EXAMPLE, f"--junitxml={junit}", "-n", "2")
    assert pytest_statuses(junit) == kconform_statuses(example_run[0])


def test_a_misspelt_implementation_is_one_usage_error(tmp_path: Path) -> None:
    done = run_pytest(tmp_path, "-q", "--kconform-impl", "refrence", f"--kconform-fixtures={SEEDS}")
    assert done.returncode == 4, done.stdout + done.stderr  # pytest's usage error
    out = done.stdout + done.stderr
    assert "ERROR: kconform: --kconform-impl unknown implementation 'refrence'" in out
    assert "Traceback" not in out and "setup" not in out and len(out.strip().splitlines()) <= 3, out


def test_collect_only_counts_the_kconform_items_and_skips_are_located_at_the_fixture(tmp_path: Path) -> None:
    (tmp_path / "test_one.py").write_text("def test_one():\n    pass\n", encoding="utf-8")
    fixtures, _ = kconform.load_fixtures([SEEDS])
    listed = run_pytest(
        tmp_path, "--co", "-q", "--kconform-impl", "reference-leader-epoch", f"--kconform-fixtures={SEEDS}"
    )
    ids = [line for line in listed.stdout.splitlines() if "::" in line]
    assert len(ids) == len(fixtures) + 1
    assert f"{len(fixtures) + 1} tests collected" in listed.stdout, listed.stdout
    ran = run_pytest(tmp_path, "-q", "-rs", "--kconform-impl", "reference-leader-epoch", f"--kconform-fixtures={SEEDS}")
    skips = [line for line in ran.stdout.splitlines() if line.startswith("SKIPPED")]
    assert skips and all(".yaml:" in line and "_pytest" not in line for line in skips), ran.stdout
