"""The public API: ``import kconform`` is complete, typed (mypy --strict), and the
example in docs/api.md runs."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

import kconform

ROOT = Path(__file__).resolve().parent.parent


def api_example() -> str:
    text = (ROOT / "docs" / "api.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```python\n(.*?)```", text, re.S)
    assert blocks, "docs/api.md has no python example"
    return str(blocks[0])


def test_every_exported_name_exists_and_is_listed() -> None:
    missing = [name for name in kconform.__all__ if not hasattr(kconform, name)]
    assert not missing
    # "@py_builtins", "@pytest_ar": pytest's assertion rewriting, when it rewrote the module (an editable
    # install in compat mode puts the tree itself on the path)
    public = {n for n in vars(kconform) if not n.startswith(("_", "@")) and n not in ("annotations", "Counter", "Any")}
    public -= {"TypeAlias"}
    assert public == set(kconform.__all__) - {"__version__"}


def test_the_package_is_marked_typed() -> None:
    for package in ("kconform", "conformance", "reference_impl"):
        assert (ROOT / package / "py.typed").is_file(), package


def test_status_counts_match_the_results() -> None:
    fixtures, problems = kconform.load_fixtures([kconform.BUNDLED_FIXTURES / "seeds" / "01-normal-round.yaml"])
    assert not problems
    impl = kconform.Implementation("reference-leader-epoch", kconform.resolve("reference-leader-epoch"))
    document = kconform.run_suite([impl], fixtures)
    counts = kconform.status_counts(document)
    assert counts["PASS"] == 1 and counts["SKIP"] == len(fixtures) - 1
    assert sum(counts.values()) == len(document["results"])


def test_api_example_runs(tmp_path: Path) -> None:
    script = tmp_path / "example.py"
    script.write_text(api_example(), encoding="utf-8")
    done = subprocess.run([sys.executable, str(script)], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert re.fullmatch(r"\d+ PASS, \d+ SKIP\n", done.stdout), done.stdout
    assert (tmp_path / "out" / "my-model.html").read_text(encoding="utf-8").startswith("<!doctype html>")


def test_mypy_strict_passes_on_the_public_api_and_its_example(tmp_path: Path) -> None:
    pytest.importorskip("mypy", reason="mypy is in the test extras: pip install -e '.[test]'")
    script = tmp_path / "api_example.py"
    script.write_text(api_example(), encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--cache-dir", str(ROOT / ".mypy_cache"), "-p", "kconform"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    done = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--cache-dir", str(ROOT / ".mypy_cache"), str(script)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr
