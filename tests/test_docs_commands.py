"""Every shell block in README.md and docs/ runs as written, in a fresh copy of the tree.

The blocks run in order, README first, in one temporary copy of the tracked files, as a
newcomer would type them (``bash -e``; the README's install makes ``.venv``, which
later blocks use through ``. .venv/bin/activate``). A Python block whose first line is
``# NAME.py`` is written to that file when it is reached (the README's in-process
adapter). Before a block, ``<!-- expect exit N -->`` sets the exit code it must end with,
and ``<!-- not run: WHY -->`` skips it, saying why. Only ```` ```sh ```` blocks run; output
samples are ```` ```text ````.

The install reuses this test run's packages: the copy's ``.venv`` is created beforehand
with a ``.pth`` file pointing at them, so ``pip install -e .`` only links the copy and
nothing is downloaded but the build backend.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import sysconfig
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
FENCE = re.compile(r"^```(\w*)\s*$")
MARK = re.compile(r"^<!--\s*(expect exit (\d+)|not run:\s*(.+?))\s*-->\s*$")


@dataclass
class Block:
    file: Path
    line: int
    lang: str
    text: str
    exit_code: int = 0
    skip: str | None = None

    @property
    def where(self) -> str:
        return f"{self.file.relative_to(ROOT)}:{self.line}"


def blocks(path: Path) -> list[Block]:
    out: list[Block] = []
    lines = path.read_text(encoding="utf-8").splitlines()
    i, pending_exit, pending_skip = 0, 0, None
    while i < len(lines):
        mark = MARK.match(lines[i])
        if mark:
            if mark.group(2):
                pending_exit = int(mark.group(2))
            else:
                pending_skip = mark.group(3)
            i += 1
            continue
        fence = FENCE.match(lines[i])
        if fence:
            end = next(j for j in range(i + 1, len(lines)) if lines[j].startswith("```"))
            out.append(Block(path, i + 1, fence.group(1), "\n".join(lines[i + 1 : end]), pending_exit, pending_skip))
            pending_exit, pending_skip, i = 0, None, end + 1
            continue
        if lines[i].strip():
            pending_exit, pending_skip = 0, None  # a mark applies to the very next block only
        i += 1
    return out


ALL = [b for doc in DOCS for b in blocks(doc)]


def test_every_skipped_block_says_why_and_blocks_have_a_language() -> None:
    for block in ALL:
        assert block.lang, f"{block.where}: say the block's language (sh, python, yaml, text, ...)"
        if block.skip is not None:
            assert len(block.skip) > 10, f"{block.where}: a block that is not run must say why"


@pytest.fixture(scope="module")
def fresh_tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The tracked files (and new, not ignored ones) copied as a clone would have them, with
    a ``.venv`` that sees this run's packages."""
    tree = tmp_path_factory.mktemp("clone")
    files = subprocess.check_output(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=ROOT, text=True
    ).split("\0")
    for name in filter(None, files):
        source = ROOT / name
        if source.is_file():
            (tree / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, tree / name)
    subprocess.run([sys.executable, "-m", "venv", str(tree / ".venv")], check=True, capture_output=True)
    site = subprocess.check_output(
        [str(tree / ".venv" / "bin" / "python"), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        text=True,
    ).strip()
    (Path(site) / "kconform-test-deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    return tree


def test_every_shell_block_runs_as_written(fresh_tree: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH", "KCONFORM_HOME")}
    env["PATH"] = os.pathsep.join(p for p in env.get("PATH", "").split(os.pathsep) if not p.startswith(sys.prefix))
    env["NO_COLOR"] = "1"
    ran = 0
    for block in ALL:
        if block.skip is not None:
            continue
        if block.lang == "python" and block.text.startswith("# ") and block.text.splitlines()[0].endswith(".py"):
            (fresh_tree / block.text.splitlines()[0][2:].strip()).write_text(block.text + "\n", encoding="utf-8")
            continue
        if block.lang != "sh":
            continue
        # each block starts where a newcomer would be: the clone, the venv active once the README made it
        script = "if [ -f .venv/bin/activate ] && [ -x .venv/bin/kconform ]; then . .venv/bin/activate; fi\n"
        done = subprocess.run(
            ["bash", "-e", "-o", "pipefail", "-c", script + block.text],
            cwd=fresh_tree,
            env=env,
            capture_output=True,
            text=True,
            timeout=600,
        )
        assert done.returncode == block.exit_code, (
            f"{block.where}: exit {done.returncode}, expected {block.exit_code}\n"
            f"$ {block.text}\n--- stdout ---\n{done.stdout[-3000:]}\n--- stderr ---\n{done.stderr[-3000:]}"
        )
        assert "Traceback" not in done.stderr, f"{block.where}: a traceback\n{done.stderr[-3000:]}"
        ran += 1
    assert ran >= 8
