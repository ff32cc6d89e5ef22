"""The kconform command: exit codes, the five report formats, expectations, diff."""

from __future__ import annotations

import argparse
import json
import shlex
import subprocess
import sys
import xml.etree.ElementTree as ET
from html.parser import HTMLParser
from pathlib import Path

import pytest

from conformance.cli.main import main

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
    document = json.loads((tmp_path / "r.json").read_text())
    # one reference implementing every generation runs every bundled fixture, and passes
    assert [i["id"] for i in document["implementations"]] == ["reference"]
    n = len(document["fixtures"])
    assert [r["status"] for r in document["results"]] == ["PASS"] * n
    assert f"{n}/{n} passed" in out and "1 implementation " in out


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
    assert code == 0 and "kip-279-fast-leader-changes" in out and "7 fixtures" in out
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


BROKEN = [sys.executable, str(ROOT / "tests" / "fakes" / "broken_adapter.py")]


@pytest.mark.parametrize(
    "command, message",
    [
        ("/nonexistent/kconform-adapter", "cannot run /nonexistent/kconform-adapter: No such file or directory"),
        (
            f"{BROKEN[0]} {BROKEN[1]} exit-at-start",
            "the process ended without replying (process exited with code 2)",
        ),
        (f"{BROKEN[0]} {BROKEN[1]} hang-at-hello", "no reply within 0.5 s"),
        (f"{BROKEN[0]} {BROKEN[1]} bad-hello", "hello reply has no valid 'implementation'"),
    ],
)
def test_an_implementation_that_cannot_start_is_reported_once_with_exit_2(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, command: str, message: str
) -> None:
    results = tmp_path / "r.json"
    code, out, err = run(
        capsys,
        "run",
        "--impl",
        f"exec:{command}",
        # only the hanging program gets a short start timeout: the others must be judged on
        # what they do, however slowly a loaded machine starts them
        "--start-timeout",
        "0.5" if "hang-at-hello" in command else "60",
        "--no-progress",
        "--results",
        str(results),
    )
    assert code == 2 and out == ""
    assert err.count("cannot start") == 1, err
    assert message in err and "nothing was run" in err
    if "exit-at-start" in command:
        assert "cannot open my data directory" in err  # its stderr, so the user sees why
    assert not results.exists()


def test_module_factory_is_found_in_the_current_folder(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "kconform_test_my_adapter.py").write_text(
        "from conformance.adapters.in_process import ReferenceAdapter\n\n"
        "def adapter():\n    return ReferenceAdapter(name='mine')\n"
    )
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", [p for p in sys.path if p not in ("", str(tmp_path))])
    code, out, _ = run(capsys, "run", "--impl", "kconform_test_my_adapter:adapter", "--id", "seed-01*", "--no-progress")
    assert code == 0 and "3/3 passed" in out
    code, _, err = run(capsys, "run", "--impl", "kconform_test_nothere:adapter", "--no-progress")
    assert code == 2 and f"looked in the current folder {tmp_path}" in err
    code, _, _ = run(capsys, "run", "--impl", "kconform_test_my_adapter:ReferenceAdapter", "--id", "seed-01*")
    assert code == 0  # a class whose arguments have defaults is a factory too
    (tmp_path / "kconform_test_bad_factory.py").write_text("def adapter(name):\n    return None\n")
    code, _, err = run(capsys, "run", "--impl", "kconform_test_bad_factory:adapter", "--no-progress")
    assert code == 2 and "the factory must take no arguments" in err, err
    (tmp_path / "kconform_test_raising_factory.py").write_text("def adapter():\n    raise OSError('no broker here')\n")
    code, _, err = run(capsys, "run", "--impl", "kconform_test_raising_factory:adapter", "--no-progress")
    assert code == 2 and "calling the factory raised OSError: no broker here (at " in err, err
    assert "kconform_test_raising_factory.py:2)" in err and "must take no arguments" not in err, err


@pytest.mark.parametrize("argv", [["list"], ["explain", "seed-01-normal-round"], ["impls"]])
def test_output_into_a_closed_pipe_ends_quietly(argv: list[str]) -> None:
    shell = f"{shlex.join([sys.executable, '-m', 'conformance.cli.main', *argv])} | head -n 1"
    done = subprocess.run(["bash", "-o", "pipefail", "-c", shell], capture_output=True, text=True, timeout=60)
    assert "Traceback" not in done.stderr and "BrokenPipe" not in done.stderr, done.stderr
    assert done.returncode == 0 and done.stdout.count("\n") == 1


def test_markdown_headings_and_counts(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    wrong = tmp_path / "w.json"
    run(capsys, "run", "--impl", WRONG_HW, "--id", "seed-01-*", "--no-progress", "--results", str(wrong))
    code, out, _ = run(capsys, "report", str(wrong), "--format", "markdown")
    assert code == 0
    headings = [line for line in out.splitlines() if line.startswith("#")]
    assert "## Failures" in headings and not [h for h in headings if "# #" in h or h.startswith("##  ")]
    assert any(h.startswith("### ") and h.endswith(": FAIL") for h in headings)
    assert "rules fired at this step:" in out and "| 1 (fetch)" in out


def test_xfail_is_counted_apart_from_failures(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    expect = tmp_path / "expect.yaml"
    expect.write_text("implementation: broken-wrong-hw\nexpected_failures:\n  seed-01-normal-round: HW+1\n")
    code, out, _ = run(
        capsys, "run", "--impl", WRONG_HW, "--id", "seed-01-*", "--expectations", str(expect), "--no-progress",
        "--results", str(tmp_path / "r.json"), "--color", "never",
    )  # fmt: skip
    assert code == 0
    assert "0/3 passed, 3 xfail" in out and "failed" not in out.split("Failures")[0]


def test_colour_only_when_asked_or_on_a_terminal(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    args = ["run", "--impl", WRONG_HW, "--id", "seed-01-normal-round/leader-epoch", "--no-progress"]
    _, plain, _ = run(capsys, *args, "--results", str(tmp_path / "a.json"))  # captured: not a terminal
    _, colour, _ = run(capsys, *args, "--results", str(tmp_path / "b.json"), "--color", "always")
    assert "\x1b[" not in plain and "\x1b[1;31mFAIL\x1b[0m" in colour


def test_junit_class_names_have_no_colons_or_spaces(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    results = tmp_path / "r.json"
    run(capsys, "run", "--impl", WRONG_HW, "--id", "seed-01-*", "--no-progress", "--results", str(results))
    _, out, _ = run(capsys, "report", str(results), "--format", "junit")
    names = [case.get("classname", "") for case in ET.fromstring(out).iter("testcase")]
    assert names and all(":" not in n and " " not in n and "/" not in n for n in names), names


def test_validate_and_run_on_a_folder_without_fixtures_exit_2(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    for argv in (["validate", str(tmp_path)], ["run", "--fixtures", str(tmp_path), "--no-progress"]):
        code, _, err = run(capsys, *argv)
        assert code == 2 and f"no fixture files (*.yaml, *.yml) under {tmp_path}" in err, err


def test_fixture_files_named_without_the_option_are_run_and_listed(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """``kconform run my-story.yaml`` runs that file (only it), as ``validate`` and
    ``explain`` take paths; with ``--fixtures`` too, both are taken."""
    mine = tmp_path / "mine.yaml"
    mine.write_text(
        (ROOT / "fixtures" / "seeds" / "01-normal-round.yaml").read_text().replace("id: seed-01-", "id: mine-01-")
    )
    results = tmp_path / "r.json"
    code, _, err = run(capsys, "run", str(mine), "--no-progress", "--results", str(results))
    assert code == 0, err
    ids = {f["id"].split("/")[0] for f in json.loads(results.read_text())["fixtures"]}
    assert ids == {"mine-01-normal-round"}
    second = ROOT / "fixtures" / "seeds" / "02-purgatory.yaml"
    code, out, _ = run(capsys, "list", str(mine), "--fixtures", str(second))
    assert code == 0 and "mine-01-normal-round/" in out and "seed-02-purgatory/" in out and "seed-03" not in out
    code, _, err = run(capsys, "run", str(tmp_path / "nope.yaml"), "--no-progress", "--results", str(results))
    assert code == 2 and "nope.yaml: (file): no such file or folder" in err, err


def test_a_second_implementation_after_one_impl_option_says_to_repeat_it(capsys: pytest.CaptureFixture[str]) -> None:
    """``run --impl A B`` reads B as a fixture path (the option takes one value and
    repeats): the error says so, not only that there is no file B."""
    for second in ("reference-hw-truncation", "exec:./my-adapter", "zoo:no-such-member"):
        code, _, err = run(capsys, "run", "--impl", "reference", second, "--no-progress")
        assert code == 2, err
        assert f"{second}: no such fixture file or folder, but it names an implementation" in err, err
        assert f"--impl A --impl {second}" in err, err


def test_a_missing_path_is_named_without_a_made_up_line(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    missing = tmp_path / "nope.yaml"
    code, _, err = run(capsys, "validate", str(missing))
    assert code == 2 and f"{missing}: (file): no such file or folder" in err and f"{missing}:1:" not in err


def test_help_documents_every_argument_exit_codes_and_defaults() -> None:
    from conformance.cli.main import build_parser

    parser = build_parser()
    subparsers = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    for name, sub in subparsers.choices.items():
        text = sub.format_help()
        assert "exit codes:" in text, name
        for action in sub._actions:
            if action.option_strings == ["-h", "--help"]:
                continue
            assert action.help, f"kconform {name} {action.dest}: no help text"
            if action.default not in (None, False, [], argparse.SUPPRESS) and action.option_strings:
                assert "default" in action.help, f"kconform {name} {action.dest}: default not stated"


def test_known_differences_are_ignored_and_counted(capsys: pytest.CaptureFixture[str], results_dir: Path) -> None:
    """An expectations file's known_differences (field or property globs) decide nothing,
    and the summary says how many failures they hid."""
    args = ["run", "--impl", WRONG_HW, "--id", "seed-01-*", "--no-progress"]
    code, out, _ = run(capsys, *args, "--results", str(results_dir / "plain.json"))
    assert code == 1
    known = results_dir / "known.yaml"
    known.write_text("known_differences:\n  'replicas.*.hw': reports HW+1\n  'SAFE-*': the same defect\n")
    code, out, _ = run(capsys, *args, "--expectations", str(known), "--results", str(results_dir / "k.json"))
    records = json.loads((results_dir / "k.json").read_text())["results"]
    marked = [f for r in records for f in r["failures"] if "known" in f]
    assert marked and all(f["known"] in ("reports HW+1", "the same defect") for f in marked)
    assert "ignored as known differences" in out
    assert code == 0, "every difference of this defect is a known one"
