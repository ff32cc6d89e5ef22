"""The plugin's settings, read from pytest's options and ini file by the plugin
(``__init__.py``) and used by its items (``items.py``): a module of its own so that
neither imports the other for it."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


@dataclass
class Settings:
    """What ``--kconform-*`` options and ``kconform_*`` ini values ask for (docs/pytest.md)."""

    impls: list[str]
    fixture_paths: list[Path]
    expectation_paths: list[Path]
    level: str | None
    fuzz_examples: int
    fuzz_steps: int
    witness_dir: Path | None
    timeout_s: float
