"""A fixture text found to fit the schemas is not checked against them again
(``conformance/fixtures/validated.py``); anything else is, and its problems are reported in full."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import TINY_FIXTURE

from conformance.fixtures import loading as fixtures
from conformance.fixtures import validated
from conformance.fixtures.loading import FixtureError, load_fixture_file

GOOD = TINY_FIXTURE

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "cache"
    monkeypatch.setenv("KCONFORM_CACHE_DIR", str(folder))
    return folder


@pytest.fixture
def schema_checks(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The files the schema check ran on (it still runs)."""
    seen: list[str] = []
    real = fixtures._schema_problems

    def counting(doc: object, lines: object, file: str) -> list[fixtures.Problem]:
        seen.append(file)
        return real(doc, lines, file)  # type: ignore[arg-type]

    monkeypatch.setattr(fixtures, "_schema_problems", counting)
    return seen


def write(folder: Path, text: str, name: str = "f.yaml") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text(text, encoding="utf-8")
    return path


def test_a_fitting_text_is_checked_once(tmp_path: Path, cache: Path, schema_checks: list[str]) -> None:
    first = load_fixture_file(write(tmp_path / "a", GOOD))
    second = load_fixture_file(write(tmp_path / "b", GOOD))  # the same text elsewhere
    assert schema_checks == [str(tmp_path / "a" / "f.yaml")]
    assert [f.id for f in first] == [f.id for f in second] == ["tiny"]
    [cache_file] = cache.iterdir()
    assert cache_file.read_text(encoding="ascii").split() == [validated._digest(GOOD)]


def test_a_changed_text_is_checked_again(tmp_path: Path, cache: Path, schema_checks: list[str]) -> None:
    path = write(tmp_path, GOOD)
    load_fixture_file(path)
    path.write_text(GOOD.replace("m0", "m1"), encoding="utf-8")
    load_fixture_file(path)
    assert len(schema_checks) == 2


def test_a_text_that_does_not_fit_is_never_remembered(tmp_path: Path, cache: Path) -> None:
    bad = write(tmp_path, GOOD.replace("values: [m0]", "values: [m0], ack: 1"))
    for _ in range(2):
        with pytest.raises(FixtureError) as info:
            load_fixture_file(bad)
        assert any("ack" in str(p) for p in info.value.problems)
    assert not validated.fits(bad.read_text(encoding="utf-8"))


def test_the_model_checks_run_on_a_remembered_text(tmp_path: Path, cache: Path) -> None:
    """Only the schema's verdict is remembered: a text that fits the schema but names an
    unknown replica is reported every time."""
    text = GOOD.replace("replicas: {A: {leo: 1}}", "replicas: {Z: {leo: 1}}")
    path = write(tmp_path, text)
    for _ in range(2):
        with pytest.raises(FixtureError, match="Z"):
            load_fixture_file(path)
    assert validated.fits(text)


def test_other_schemas_make_another_cache(tmp_path: Path, cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    load_fixture_file(write(tmp_path, GOOD))
    assert validated.fits(GOOD)
    monkeypatch.setattr(validated, "_schemas_digest", lambda: "another-version")
    assert not validated.fits(GOOD)


def test_an_empty_cache_dir_turns_the_cache_off(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, schema_checks: list[str]
) -> None:
    monkeypatch.setenv("KCONFORM_CACHE_DIR", "")
    path = write(tmp_path, GOOD)
    load_fixture_file(path)
    load_fixture_file(path)
    assert len(schema_checks) == 2 and validated.cache_dir() is None


def test_an_unwritable_cache_is_ignored(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    blocker = write(tmp_path, "not a folder", name="blocker")
    monkeypatch.setenv("KCONFORM_CACHE_DIR", str(blocker / "cache"))
    [fixture] = load_fixture_file(write(tmp_path, GOOD))
    assert fixture.id == "tiny" and validated.fits(GOOD)  # remembered in this process only
    validated._known.cache_clear()  # as a new process would start
    assert not validated.fits(GOOD)


def test_a_run_with_a_warm_cache_imports_neither_jsonschema_nor_the_corpus_commands(tmp_path: Path) -> None:
    """``kconform list`` (which loads every bundled fixture, as ``run`` does) a second time."""
    script = (
        "import sys\n"
        "from conformance.cli.main import main\n"
        "code = main(['list'])\n"
        "print(code, 'jsonschema' in sys.modules, 'conformance.cli.corpus' in sys.modules, file=sys.stderr)\n"
    )
    env = {**os.environ, "KCONFORM_CACHE_DIR": str(tmp_path / "cache")}
    runs = [
        subprocess.run([sys.executable, "-c", script], cwd=ROOT, env=env, capture_output=True, text=True, check=True)
        for _ in range(2)
    ]
    assert [r.stderr.split()[-3:] for r in runs] == [["0", "True", "False"], ["0", "False", "False"]]
