"""Helpers shared by the corpus tests (test_corpus.py, test_replay_spark.py)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from conformance.cli.main import main
from conformance.corpus.aggregate import Aggregate, merge, outcome_totals
from conformance.corpus.backends import run_tasks
from conformance.corpus.generate import PartTask, parse_mix, write_part
from conformance.corpus.reading import plan_splits
from conformance.corpus.replay import ReplayTask, import_roots, replay_split

BROKEN = Path(__file__).parent / "fakes" / "broken_adapter.py"


def cli(*args: object) -> int:
    return main([str(a) for a in args])


def make_corpus(folder: Path, traces: int, seed: int = 7, part: int = 20, record_from: str | None = None) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    mix = tuple(parse_mix([]).items())
    for i, start in enumerate(range(0, traces, part)):
        task = PartTask(str(folder), i, seed, start, min(part, traces - start), mix, record_from, 5.0, True, ())
        write_part(task)
    return folder


def replay(
    corpus: Path,
    impls: list[str],
    backend: str = "inline",
    out: Path | None = None,
    spark: Any = None,
    timeout_s: float = 5.0,
) -> Aggregate:
    splits = plan_splits([corpus], split_lines=15)
    tasks = [
        ReplayTask(s, i, tuple(impls), timeout_s, str(out) if out else None, sys_path=import_roots())
        for i, s in enumerate(splits)
    ]
    return run_tasks(
        replay_split, tasks, [s.lines for s in splits], backend=backend, reduce=merge, workers=2, spark=spark
    )


def outcomes(agg: Aggregate, impl: str) -> dict[str, int]:
    return outcome_totals(agg, impl)


def per_trace(folder: Path) -> dict[tuple[str, str], dict[str, object]]:
    records = {}
    for part in folder.glob("part-*.jsonl"):
        for line in part.read_text().splitlines():
            r = json.loads(line)
            records[(r["implementation"], r["fixture"])] = r
    return records
