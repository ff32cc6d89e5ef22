"""Replay and generation on Spark: local[2] gives the inline results, faults stay per
trace, and a standalone cluster on 127.0.0.1 gives the local results.

One session-scoped SparkSession serves every test here (start-up costs about 10 s); the
corpora are small. Deselect with ``-m "not spark"``.
"""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from corpus_helpers import BROKEN, make_corpus, outcomes, replay

from conformance.corpus.aggregate import document
from conformance.corpus.backends import run_tasks
from conformance.corpus.cluster import LocalCluster
from conformance.corpus.generate import PartTask, parse_mix, write_part

pytestmark = pytest.mark.spark

IMPLS = ["reference", "zoo:no-purgatory"]


@pytest.fixture(scope="session")
def spark() -> Iterator[Any]:
    from conformance.corpus.spark import session

    spark = session("local[2]", app="kconform-tests")
    yield spark
    spark.stop()


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_corpus(tmp_path_factory.mktemp("spark-corpus"), 40)


def test_spark_local_gives_the_inline_results(spark: Any, corpus: Path) -> None:
    on_spark, inline = replay(corpus, IMPLS, backend="spark", spark=spark), replay(corpus, IMPLS)
    assert on_spark.counts == inline.counts
    assert on_spark.rules == inline.rules
    assert [(k, r["reason"]) for k, r, _ in on_spark.first] == [(k, r["reason"]) for k, r, _ in inline.first]
    assert outcomes(on_spark, "reference") == {"passed": 40}
    assert outcomes(on_spark, "zoo:no-purgatory").get("failed", 0) > 0


def test_faulty_adapters_inside_a_spark_job_error_their_traces_and_every_trace_is_counted(
    spark: Any, corpus: Path
) -> None:
    part = corpus / "part-00000.jsonl.gz"
    impls = [f"exec:{sys.executable} {BROKEN} {mode}" for mode in ("crash-on-third-step", "garbage", "hang")]
    agg = replay(part, ["reference", *impls], backend="spark", spark=spark, timeout_s=0.5)
    assert outcomes(agg, "reference") == {"passed": 20}
    for impl in impls:
        counts = outcomes(agg, impl)
        assert sum(counts.values()) == 20, (impl, counts)
        assert counts.get("errored", 0) >= 15, (impl, counts)


def test_generation_on_spark_writes_the_same_corpus(spark: Any, tmp_path: Path) -> None:
    mix = tuple(parse_mix([]).items())
    tasks = [PartTask(str(tmp_path / "spark"), i, 3, i * 5, 5, mix) for i in range(3)]
    (tmp_path / "spark").mkdir()
    parts = run_tasks(write_part, tasks, [5, 5, 5], backend="spark", reduce=lambda a, b: a + b, spark=spark)
    assert sorted(p["file"] for p in parts) == ["part-00000.jsonl.gz", "part-00001.jsonl.gz", "part-00002.jsonl.gz"]
    alone = make_corpus(tmp_path / "inline", 15, seed=3, part=5)
    for name in ("part-00000.jsonl.gz", "part-00002.jsonl.gz"):
        assert gzip.decompress((tmp_path / "spark" / name).read_bytes()) == gzip.decompress((alone / name).read_bytes())


def test_a_standalone_cluster_on_loopback_gives_the_local_results(spark: Any, corpus: Path, tmp_path: Path) -> None:
    """Master and worker started from the pyspark install on free ports; ``kconform replay
    --master spark://...`` in a fresh process; its totals equal the local session's."""
    local = replay(corpus, IMPLS, backend="spark", spark=spark)
    expected = document(local, IMPLS, started=datetime.now(UTC), duration_s=0, selection={}, corpus={})
    out = tmp_path / "cluster-out"
    with LocalCluster(cores=2, memory="1g", work_dir=tmp_path / "cluster") as cluster:
        done = subprocess.run(
            [sys.executable, "-m", "conformance.cli.main", "replay", "--corpus", str(corpus), "--impl", IMPLS[0],
             "--impl", IMPLS[1], "--master", cluster.url, "--out", str(out), "--split-traces", "15",
             "--format", "json", "--no-progress"],
            capture_output=True, text=True, timeout=300, cwd=Path(__file__).parent, check=False,
        )  # fmt: skip
    assert done.returncode == 1, done.stderr[-3000:]
    assert f"[spark {cluster.url}]" in done.stderr
    got = json.loads((out / "results.json").read_text())
    for key in ("counts", "rules", "statuses"):
        assert got["corpus"][key] == expected["corpus"][key], key
    assert [r["fixture"] for r in got["results"]] == [r["fixture"] for r in expected["results"]]
    assert cluster.master is not None and cluster.master.poll() is not None, "the master was stopped"
    assert cluster.worker is not None and cluster.worker.poll() is not None, "the worker was stopped"
