"""The code is ruff clean (ruff is a test dependency, configured in pyproject.toml)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

HOME = Path(__file__).resolve().parents[1]


def test_ruff_check_passes() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "ruff", "check", "--no-cache", str(HOME)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
