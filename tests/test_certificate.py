"""Safety is a certificate: an implementation that does nothing or shows nothing meets no
level in any command (run, fuzz, explore, replay), and the output says what could not be
checked and why (tests/fakes/shows_nothing.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
from corpus_helpers import make_corpus

from conformance.cli.main import main

FAKES = Path(__file__).parent / "fakes"
SHOWS_NOTHING = ("shows_nothing:refuser", "shows_nothing:empty", "shows_nothing:minimal")


def _run(capsys: pytest.CaptureFixture[str], *args: object) -> tuple[int, str]:
    code = main([str(a) for a in args])
    out, err = capsys.readouterr()
    return code, out + err


@pytest.fixture(autouse=True)
def _in_fakes(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(FAKES)
    monkeypatch.syspath_prepend(str(FAKES))


@pytest.mark.parametrize("impl", SHOWS_NOTHING)
def test_run_never_certifies_it(impl: str, capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, out = _run(capsys, "run", "--impl", impl, "--level", "safety", "--results", tmp_path / "r.json")
    assert code == 1
    assert "safety not established" in out and ("not checkable" in out or "never checked" in out)
    assert "│ safety " not in out.replace("safety not established", "")


@pytest.mark.parametrize("impl", SHOWS_NOTHING)
def test_fuzz_never_certifies_it(impl: str, capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, out = _run(
        capsys,
        "fuzz",
        "--impl",
        impl,
        "--level",
        "safety",
        "--examples",
        15,
        "--seed",
        1,
        "--witness",
        tmp_path / "w.yaml",
    )
    assert code == 1
    assert "met level safety" not in out
    assert "not established" in out or "fails level safety" in out


@pytest.mark.parametrize("impl", SHOWS_NOTHING)
def test_explore_never_certifies_it(impl: str, capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, out = _run(
        capsys,
        "explore",
        "--impl",
        impl,
        "--level",
        "safety",
        "--depth",
        3,
        "--generation",
        "leader-epoch",
        "--out",
        tmp_path,
    )
    assert code == 1
    assert "not established" in out or "fails level safety" in out


def test_replay_never_certifies_them(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    corpus = make_corpus(tmp_path / "corpus", 20)
    args: list[object] = [
        "replay",
        "--corpus",
        corpus,
        "--backend",
        "inline",
        "--level",
        "safety",
        "--out",
        tmp_path / "out",
        "--no-progress",
    ]
    for impl in SHOWS_NOTHING:
        args += ["--impl", impl]
    code, out = _run(capsys, *args)
    assert out.count("safety not established") >= 3, out
    assert code == 1


def test_the_reference_is_certified_everywhere(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, out = _run(capsys, "run", "--impl", "reference", "--level", "safety", "--results", tmp_path / "r.json")
    assert code == 0 and "not established" not in out
    code, out = _run(
        capsys,
        "fuzz",
        "--impl",
        "reference",
        "--level",
        "safety",
        "--examples",
        15,
        "--seed",
        1,
        "--witness",
        tmp_path / "w.yaml",
    )
    assert code == 0 and "met level safety" in out
