"""Where kconform's data lives: the spec (schemas) and the bundled fixtures.

kconform is installed from its source tree (``pip install -e .``), so the data folders
sit beside the packages. ``KCONFORM_HOME`` points elsewhere if needed.
"""

from __future__ import annotations

import os
from pathlib import Path

HOME = Path(os.environ.get("KCONFORM_HOME", Path(__file__).resolve().parent.parent))
SCHEMA_DIR = HOME / "spec"
FIXTURES_DIR = HOME / "fixtures"
