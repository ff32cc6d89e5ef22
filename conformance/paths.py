"""Where kconform's data lives: the spec (schemas, protocol) and the bundled fixtures.

An installed wheel carries both as package data under ``conformance/data/`` (mapped from
the top-level ``spec/`` and ``fixtures/`` in pyproject.toml), read through
``importlib.resources``. A source checkout (``pip install -e .``) has no such folder and
reads them beside the packages. ``KCONFORM_HOME`` points at another tree holding
``spec/`` and ``fixtures/``.
"""

from __future__ import annotations

import os
from importlib.resources import files
from pathlib import Path


def data_dir(name: str) -> Path:
    """The folder ``name`` (``spec`` or ``fixtures``) of this installation."""
    home = os.environ.get("KCONFORM_HOME")
    if home:
        return Path(home) / name
    installed = Path(str(files("conformance").joinpath("data", name)))
    if installed.is_dir():
        return installed
    return Path(__file__).resolve().parent.parent / name


SCHEMA_DIR = data_dir("spec")
FIXTURES_DIR = data_dir("fixtures")
