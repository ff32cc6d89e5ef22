"""kconform as pytest items: ``pytest --kconform-impl NAME``.

Registered under the ``pytest11`` entry point, so an installed kconform adds these
options to every pytest run; nothing is collected unless an implementation is named
(``--kconform-impl`` or the ``kconform_impl`` ini option). Then each fixture case becomes
one test item, ``kconform[IMPL]::FIXTURE/GENERATION``, with markers ``kconform``, the
fixture's tags and its generation (``pytest -m "kconform and data-loss"``).

How kconform outcomes map to pytest's (and so to pytest's JUnit XML, which then counts
exactly what ``kconform run --format junit`` counts):

- passed -> passed; failed -> failed, with kconform's failure report as the text (step,
  kind, field, expected vs observed, the rules the reference fires, the fixture's ``why``);
- errored (the implementation could not answer) -> an error in setup;
- skipped (generation, step kinds or fields not supported) -> skipped with the reason;
- a case an expectations file lists -> xfailed when it fails or errors, and a failure
  ("XPASS") when it passes, as ``kconform run`` treats it.

An implementation is a registered name, ``module:factory``, ``exec:COMMAND``, or the name
of a pytest fixture (in your ``conftest.py``) that returns an ``Adapter``: that is how an
in-process implementation under test plugs in with your own fixtures. docs/pytest.md.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from ..fixtures.paths import FIXTURES_DIR
from .settings import Settings

DEFAULT_TIMEOUT_S = 10.0
"""The stdio reply timeout (``conformance.adapters.stdio.DEFAULT_TIMEOUT_S``; not imported here so
that the plugin costs nothing in a pytest run that does not use it)."""

LEVELS = ("exact", "settled", "safety")
"""Conformance levels (docs/levels.md, ``conformance.judging.levels.LEVELS``; spelled out here so the
plugin imports nothing when unused)."""


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("kconform", "kconform conformance cases")
    group.addoption(
        "--kconform-impl",
        action="append",
        default=[],
        metavar="NAME",
        help="run the kconform fixtures against this implementation: a registered name, module:factory, "
        "exec:COMMAND or a pytest fixture returning an Adapter (repeatable)",
    )
    group.addoption(
        "--kconform-fixtures",
        action="append",
        default=[],
        metavar="PATH",
        help="fixture file or folder (repeatable; default: kconform's bundled fixtures)",
    )
    group.addoption(
        "--kconform-expectations",
        action="append",
        default=[],
        metavar="FILE",
        help="expected failures (YAML, as kconform run --expectations): those cases xfail",
    )
    group.addoption(
        "--kconform-level",
        default=None,
        choices=LEVELS,
        help="conformance level to check (default: exact)",
    )
    group.addoption(
        "--kconform-fuzz",
        type=int,
        default=None,
        metavar="N",
        help="add one item per implementation and generation that runs N random differential runs "
        "(hypothesis state machine) against the reference",
    )
    group.addoption("--kconform-fuzz-steps", type=int, default=None, metavar="N", help="steps per random run (30)")
    group.addoption(
        "--kconform-witness-dir",
        default=None,
        metavar="DIR",
        help="where a failing fuzz item writes its shrunk witness fixture (default: out/ under the rootdir)",
    )
    group.addoption(
        "--kconform-timeout", type=float, default=None, metavar="S", help=f"stdio reply timeout ({DEFAULT_TIMEOUT_S})"
    )
    parser.addini("kconform_impl", "implementations to check (as --kconform-impl)", type="linelist", default=[])
    parser.addini("kconform_fixtures", "fixture files or folders (as --kconform-fixtures)", type="paths", default=[])
    parser.addini("kconform_expectations", "expectations files (as --kconform-expectations)", type="paths", default=[])
    parser.addini("kconform_fuzz", "random runs per fuzz item (as --kconform-fuzz; 0: none)", default="0")


def _settings(config: pytest.Config) -> Settings:
    option = config.option

    def paths(given: list[str], ini: str) -> list[Path]:
        if given:
            return [Path(p) if Path(p).is_absolute() else Path.cwd() / p for p in given]
        return [Path(p) for p in config.getini(ini)]

    fuzz = option.kconform_fuzz if option.kconform_fuzz is not None else int(config.getini("kconform_fuzz") or 0)
    return Settings(
        impls=list(option.kconform_impl) or list(config.getini("kconform_impl")),
        fixture_paths=paths(option.kconform_fixtures, "kconform_fixtures") or [FIXTURES_DIR],
        expectation_paths=paths(option.kconform_expectations, "kconform_expectations"),
        level=option.kconform_level,
        fuzz_examples=fuzz,
        fuzz_steps=option.kconform_fuzz_steps or 30,
        witness_dir=Path(option.kconform_witness_dir).resolve() if option.kconform_witness_dir else None,
        timeout_s=option.kconform_timeout or DEFAULT_TIMEOUT_S,
    )


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "kconform: a kconform conformance case (or its fuzz item)")
    settings = _settings(config)
    if not settings.impls:
        return
    from .items import KconformSession  # the harness is imported only when used

    session = KconformSession(settings, config)
    for marker in session.marker_names():
        config.addinivalue_line("markers", f"{marker}: kconform fixture tag or generation")
    config.pluginmanager.register(session, "kconform-session")
