"""The README's install lets a user's type checker see kconform (``editable_mode=compat``:
setuptools' default editable finder is invisible to mypy)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path


def test_mypy_sees_kconform_from_a_users_folder(tmp_path: Path) -> None:
    (tmp_path / "user.py").write_text("import kconform\n\nx: int = kconform.__name__\n", encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--no-incremental", "user.py"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert "import-not-found" not in done.stdout, done.stdout
    assert 'expression has type "str", variable has type "int"' in done.stdout, done.stdout
