"""The plain install works away from the source tree: a wheel carries spec/ and fixtures/,
``kconform run`` passes every bundled fixture on one ``reference``, and ``kconform fuzz``
works (hypothesis is a runtime dependency). pyproject.toml lists every package."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
_NOT_SOURCE = (".git", ".venv", "out", "build", "dist", "*.egg-info", "__pycache__", ".*_cache", ".hypothesis")


def test_pyproject_lists_every_python_package() -> None:
    listed = set(tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"])
    found = {
        ".".join(init.parent.relative_to(ROOT).parts)
        for top in ("reference_impl", "conformance", "kconform")
        for init in (ROOT / top).rglob("__init__.py")
        if (ROOT / top).is_dir()
    }
    assert found <= listed, f"add to [tool.setuptools] packages: {sorted(found - listed)}"


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh venv holding kconform's wheel (built from this tree, not editable); its
    dependencies come from the test venv's site-packages through a .pth file, so the test
    needs no network."""
    tmp = tmp_path_factory.mktemp("wheel")
    venv = tmp / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = str(venv / "bin" / "python")
    site = subprocess.check_output(
        [python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"], text=True
    )
    (Path(site.strip()) / "kconform-test-deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    # Build from a copy: setuptools leaves build/ and kconform.egg-info/ in the folder it
    # builds in. In this tree, a stale build/lib would put deleted fixtures in the wheel,
    # and the egg-info would make pytest rewrite kconform's modules in later tests.
    source = tmp / "source"
    shutil.copytree(ROOT, source, ignore=shutil.ignore_patterns(*_NOT_SOURCE))
    done = subprocess.run(
        [sys.executable, "-m", "pip", "--python", python, "install", "-q", "--no-deps", str(source)],
        capture_output=True,
        text=True,
        cwd=tmp,
    )
    assert done.returncode == 0, done.stderr
    return venv


def _kconform(venv: Path, cwd: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "KCONFORM_HOME")}
    return subprocess.run(
        [str(venv / "bin" / "kconform"), *argv], cwd=cwd, env=env, capture_output=True, text=True, timeout=300
    )


def test_the_wheel_runs_every_bundled_fixture_on_one_reference(installed: Path, tmp_path: Path) -> None:
    done = _kconform(installed, tmp_path, "run", "--no-progress", "--color", "never")
    assert done.returncode == 0, done.stderr
    n = len(list((ROOT / "fixtures").rglob("*.yaml")))
    assert "reference" in done.stdout and "passed" in done.stdout and "skipped" not in done.stdout
    assert str(ROOT) not in done.stdout + done.stderr  # nothing read from the source tree
    explained = _kconform(installed, tmp_path, "explain", "seed-01-normal-round")
    assert explained.returncode == 0 and "FETCH-PARK-1" in explained.stdout
    assert n > 0


def test_the_installed_copy_reads_its_own_data(installed: Path, tmp_path: Path) -> None:
    code = "import conformance.fixtures.paths as p; print(p.SCHEMA_DIR); print(p.FIXTURES_DIR)"
    out = subprocess.check_output([str(installed / "bin" / "python"), "-c", code], cwd=tmp_path, text=True)
    for line in out.split():
        assert Path(line).is_relative_to(installed) and Path(line).is_dir(), line


def test_the_wheel_fuzzes(installed: Path, tmp_path: Path) -> None:
    # a fixed seed: the same five runs every time (a fresh seed once drew a leaderless run that
    # exposed a certificate bug, tests/test_safety.py; the sweep of seeds is fuzz's own tests')
    done = _kconform(
        installed, tmp_path, "fuzz", "--impl", "reference", "--examples", "5", "--steps", "10", "--seed", "125"
    )
    assert done.returncode == 0, done.stderr
    assert "agreed with the reference on 5 random runs" in done.stdout
