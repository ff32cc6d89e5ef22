"""Every script in benchmarks/ still runs: each in its ``--smoke`` mode (tiny sizes, seconds).

A benchmark is run by hand, rarely, so it rots unseen (``bench_adapters.py`` once stopped
with ``StepRejected`` for months). One test per file of the directory, so a new script is
included without anyone listing it; each must take ``--smoke`` and exit 0. Speed is never
asserted here, only that the script runs to its end. ``bench_kafka.py`` needs the Kafka
adapter built and java, ``bench_compiled.py`` mypyc and a C compiler: without them the smoke
mode exits 3 with the reason, and the test skips with it. Deselect all of them with ``-m 'not benchmark_smoke'``.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCRIPTS = sorted((ROOT / "benchmarks").glob("*.py"))
CANNOT_RUN_HERE = 3
"""A smoke run's exit code for "what this benchmark measures is not installed here"."""
NEEDS_A_TOOLCHAIN = frozenset({"bench_kafka.py", "bench_compiled.py"})
"""The scripts that may exit ``CANNOT_RUN_HERE``: the Kafka adapter built and java; mypyc and a C compiler."""


def test_the_benchmarks_directory_is_listed() -> None:
    assert len(SCRIPTS) >= 10, SCRIPTS


@pytest.mark.benchmark_smoke
@pytest.mark.parametrize("script", SCRIPTS, ids=[s.name for s in SCRIPTS])
def test_a_benchmark_runs_in_smoke_mode(script: Path) -> None:
    done = subprocess.run(
        [sys.executable, str(script), "--smoke"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=180,
    )
    if done.returncode == CANNOT_RUN_HERE and script.name in NEEDS_A_TOOLCHAIN:
        pytest.skip(done.stdout.strip() or done.stderr.strip())
    assert done.returncode == 0, (
        f"{script.name} --smoke exited {done.returncode}:\n{done.stdout[-2000:]}\n{done.stderr[-4000:]}"
    )
    assert done.stdout.strip(), f"{script.name} --smoke printed nothing"
