"""The kconform command: exit codes, the five report formats, expectations, diff."""

from __future__ import annotations

import json
import sys
import xml.etree.ElementTree as ET
from html.parser import HTMLParser
from pathlib import Path

import pytest

from conformance.cli import main

ROOT = Path(__file__).resolve().parents[1]
WRONG_HW = f"exec:{sys.executable} {ROOT / 'tests' / 'fakes' / 'broken_adapter.py'} wrong-hw"


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture(scope="module")
def results_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("results")


def test_run_default_suite_prints_the_summary(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, out, _ = run(capsys, "run", "--results", str(tmp_path / "r.json"), "--no-progress")
    assert code == 0
    assert "Summary" in out and "reference-leader-epoch" in out
    document = json.loads((tmp_path / "r.json").read_text())
    assert len(document["results"]) == 3 * len(document["fixtures"])


def test_malformed_fixture_exits_2_with_file_line_field(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("id: bad\ntitle: t\nsource: s\nsteps:\n  - do: {kind: fetch, replica: B, speed: 3}\n")
    code, _, err = run(capsys, "run", "--fixtures", str(bad), "--no-progress")
    assert code == 2
    assert f"{bad}:5: steps[0].do: unknown field ('speed' was unexpected)" in err
    code, _, err = run(capsys, "validate", str(bad))
    assert code == 2 and f"{bad}:5:" in err


def test_unknown_implementation_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "run", "--impl", "nope", "--no-progress")
    assert code == 2 and "unknown implementation 'nope'" in err


def test_unexpected_failures_exit_1_and_expectations_turn_them_into_xfail(
    capsys: pytest.CaptureFixture[str], results_dir: Path
) -> None:
    args = ["run", "--impl", WRONG_HW, "--id", "seed-01-*", "--id", "seed-02-*", "--no-progress"]
    code, out, _ = run(capsys, *args, "--results", str(results_dir / "wrong.json"))
    assert code == 1 and "FAIL" in out
    expect = results_dir / "expect.yaml"
    expect.write_text(
        "implementation: broken-wrong-hw\nexpected_failures:\n"
        "  seed-01-normal-round: reports HW+1\n  seed-02-purgatory: reports HW+1\n"
    )
    code, _, _ = run(capsys, *args, "--expectations", str(expect), "--results", str(results_dir / "x.json"))
    assert code == 0
    statuses = {r["status"] for r in json.loads((results_dir / "x.json").read_text())["results"]}
    assert statuses == {"XFAIL"}
    code, _, err = run(
        capsys,
        "run",
        "--id",
        "seed-01-*",
        "--expectations",
        str(expect),
        "--no-progress",
        "--impl",
        "reference",
        "--results",
        str(results_dir / "xpass.json"),
    )
    assert code == 0  # the expectations name another implementation: nothing unexpected
    assert "warning: expected failure for a fixture not run" in err  # and they are reported stale


def test_xpass_is_unexpected(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    expect = tmp_path / "e.yaml"
    expect.write_text("implementation: reference\nexpected_failures:\n  seed-11-consumer-visibility: thought broken\n")
    code, out, _ = run(
        capsys,
        "run",
        "--impl",
        "reference",
        "--id",
        "seed-11-*",
        "--expectations",
        str(expect),
        "--no-progress",
        "--results",
        str(tmp_path / "r.json"),
        "--matrix",
    )
    assert code == 1 and "XPASS" in out


@pytest.mark.parametrize("fmt", ["terminal", "markdown", "html", "json", "junit"])
def test_report_formats(capsys: pytest.CaptureFixture[str], results_dir: Path, fmt: str) -> None:
    source = results_dir / "wrong.json"
    if not source.exists():
        run(capsys, "run", "--impl", WRONG_HW, "--id", "seed-01-*", "--no-progress", "--results", str(source))
    target = results_dir / f"report.{fmt}"
    code, _, _ = run(capsys, "report", str(source), "--format", fmt, "-o", str(target))
    assert code == 0
    text = target.read_text()
    if fmt == "junit":
        root = ET.fromstring(text.split("\n", 1)[1])
        assert root.tag == "testsuites" and int(root.get("failures", "0")) >= 1
        assert root.find("testsuite/testcase/failure") is not None
    elif fmt == "html":
        assert text.startswith("<!doctype html>") and "<style>" in text
        assert "http://" not in text and "https://" not in text and "<script" not in text
        checker = _TagBalance()
        checker.feed(text)
        assert checker.stack == []
        assert 'class="fail"' in text
    elif fmt == "json":
        assert json.loads(text)["kconform"]["format"] == 1
    elif fmt == "markdown":
        assert text.startswith("# kconform results") and "| implementation" in text
    else:
        assert "Failures" in text and "replicas.A.hw" in text


class _TagBalance(HTMLParser):
    VOID = frozenset({"meta", "br", "hr", "img", "link", "input"})

    def __init__(self) -> None:
        super().__init__()
        self.stack: list[str] = []

    def handle_starttag(self, tag: str, attrs: object) -> None:
        if tag not in self.VOID:
            self.stack.append(tag)

    def handle_endtag(self, tag: str) -> None:
        assert self.stack and self.stack[-1] == tag, (tag, self.stack[-5:])
        self.stack.pop()


def test_report_on_a_bad_file_exits_2(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    bad = tmp_path / "r.json"
    bad.write_text("{")
    code, _, err = run(capsys, "report", str(bad))
    assert code == 2 and f"{bad}:1: not JSON" in err


def test_diff_lists_regressions_and_fixes(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    good, bad = tmp_path / "good.json", tmp_path / "bad.json"
    run(capsys, "run", "--impl", "reference", "--id", "seed-02-*", "--no-progress", "--results", str(good))
    run(capsys, "run", "--impl", WRONG_HW, "--id", "seed-02-*", "--no-progress", "--results", str(bad))
    for path in (good, bad):  # same implementation id on both sides
        document = json.loads(path.read_text())
        for r in document["results"]:
            r["implementation"] = "mine"
        path.write_text(json.dumps(document))
    code, out, _ = run(capsys, "diff", str(good), str(bad))
    assert code == 1 and "regressions (3)" in out and "seed-02-purgatory/leader-epoch" in out
    code, out, _ = run(capsys, "diff", str(bad), str(good), "--format", "json")
    assert code == 0 and len(json.loads(out)["fixes"]) == 3


def test_list_explain_impls(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "list", "--tag", "kip-279")
    assert code == 0 and "kip-279-fast-leader-changes" in out and "2 fixtures" in out
    code, out, _ = run(capsys, "explain", "seed-01-normal-round/leader-epoch", "--format", "markdown")
    assert code == 0 and "replicas.B.hw *" in out and "HW-FOLLOWER-1" in out
    code, _, err = run(capsys, "explain", "nope")
    assert code == 2 and "no fixture 'nope'" in err
    code, out, _ = run(capsys, "impls")
    assert code == 0 and "reference-diverging-epoch" in out


def test_fuzz_agrees_for_the_reference_and_writes_a_witness_otherwise(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    code, out, _ = run(capsys, "fuzz", "--impl", "reference", "--examples", "5", "--steps", "10", "--derandomize")
    assert code == 0 and "agreed with the reference on 5 random runs" in out
    witness = tmp_path / "w.yaml"
    code, out, _ = run(
        capsys, "fuzz", "--impl", WRONG_HW, "--examples", "20", "--witness", str(witness), "--derandomize"
    )
    assert code == 1 and witness.exists()
    code, _, _ = run(
        capsys,
        "run",
        "--impl",
        WRONG_HW,
        "--fixtures",
        str(witness),
        "--no-progress",
        "--results",
        str(tmp_path / "r.json"),
    )
    assert code == 1


def test_bad_expectations_file_names_line_and_field(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    bad = tmp_path / "e.yaml"
    bad.write_text("implementation: x\nexpected_failures:\n  seed-01-normal-round: ''\n")
    code, _, err = run(capsys, "run", "--expectations", str(bad), "--no-progress")
    assert code == 2
    assert f"{bad}:3: expected_failures.seed-01-normal-round: the reason must be a non-empty string" in err


def test_terminal_report_shows_ten_failures_unless_asked(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    results = tmp_path / "r.json"
    run(capsys, "run", "--impl", WRONG_HW, "--id", "seed-0*", "--no-progress", "--results", str(results))
    code, out, _ = run(capsys, "report", str(results))
    assert code == 0 and out.count(": FAIL\n") == 10 and "... and " in out
    code, out, _ = run(capsys, "report", str(results), "--all-failures")
    assert code == 0 and out.count(": FAIL\n") > 10 and "... and " not in out
