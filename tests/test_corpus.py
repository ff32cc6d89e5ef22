"""Corpora: the line format, seeded generation, and replay inline and on a process pool.

Spark is tested in test_replay_spark.py; everything here runs without a JVM.
"""

from __future__ import annotations

import gzip
import json
import sys
from pathlib import Path

import pytest
import yaml
from corpus_helpers import BROKEN, cli, make_corpus, outcomes, per_trace, replay

from conformance.adapters.in_process import ReferenceAdapter
from conformance.cli.main import main
from conformance.corpus.aggregate import document
from conformance.corpus.format import (
    AMENDED_FROM,
    CorpusLineError,
    apply_changes,
    diff_observations,
    dumps,
    parse_line,
)
from conformance.corpus.generate import generate_trace, parse_mix, reference_revision
from conformance.corpus.reading import plan_splits
from conformance.corpus.replay import ReplayTask, replay_split
from conformance.fixtures.loading import load_fixture_file, load_fixtures
from conformance.fixtures.paths import FIXTURES_DIR
from conformance.judging.runner import run_fixture
from reference_impl.observe import changed_keys


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_corpus(tmp_path_factory.mktemp("corpus"), 60)


# --- format ---------------------------------------------------------------------------------


def test_changes_rebuild_the_next_observation() -> None:
    before = {"leader": "A", "replicas": {"A": {"hw": 0, "remote_leo": {"B": 0}}, "B": {"hw": 0}}, "consumer": None}
    after = {"leader": None, "replicas": {"A": {"hw": 1}, "B": {"hw": 0}}, "consumer": {"offset": 0}}
    changes = diff_observations(before, after)
    assert apply_changes(before, changes, "changes") == after
    assert before["replicas"]["A"]["remote_leo"] == {"B": 0}, "the previous observation is not modified"
    assert [["replicas", "A", "remote_leo"]] in changes


def test_a_generated_line_round_trips_to_the_reference_observations() -> None:
    record = generate_trace(3, 11)
    trace = parse_line(dumps(record), "c.jsonl", 5)
    adapter = ReferenceAdapter()
    result = run_fixture(adapter, adapter.describe(), trace.fixture, "reference")
    assert result.outcome == "passed", result.reason
    assert all(fs.expect for fs in trace.fixture.steps), "every step carries its whole expected observation"
    assert trace.rules is not None and len(trace.rules) == len(trace.fixture.steps)


@pytest.mark.parametrize(
    ("line", "where"),
    [
        ("{not json", "c.jsonl:4: (json)"),
        ('{"id": "x", "config": {}, "steps": [{"do": {"kind": "jump"}}]}', "c.jsonl:4: steps[0].do.kind"),
        ('{"id": "x", "config": {"replicas": []}, "steps": []}', "c.jsonl:4: config.replicas"),
        ('{"id": "x", "config": {}, "steps": [{"do": {"kind": "tick", "ms": 1}, "changes": []}]}', "steps[0].changes"),
        ('{"id": "X Y", "config": {}, "steps": []}', "c.jsonl:4: id"),
    ],
)
def test_a_malformed_line_names_file_line_and_field(line: str, where: str) -> None:
    with pytest.raises(CorpusLineError) as info:
        parse_line(line, "c.jsonl", 4)
    assert where in str(info.value)


# --- generation ----------------------------------------------------------------------------


def test_generation_is_deterministic_per_seed_and_index() -> None:
    assert generate_trace(1, 42) == generate_trace(1, 42)
    assert generate_trace(1, 42) != generate_trace(2, 42)
    assert generate_trace(1, 42)["id"] == "s1-42"


def test_any_trace_regenerates_alone(tmp_path: Path) -> None:
    main(["generate", "--traces", "6", "--seed", "5", "--out", str(tmp_path / "all"), "--backend", "inline"])
    main(["generate", "--traces", "1", "--seed", "5", "--start", "4", "--out", str(tmp_path / "one"), "--no-gzip"])
    lines = gzip.decompress((tmp_path / "all" / "part-00000.jsonl.gz").read_bytes()).decode().splitlines()
    assert (tmp_path / "one" / "part-00000.jsonl").read_text().strip() == lines[4]
    manifest = json.loads((tmp_path / "all" / "corpus-manifest.json").read_text())
    assert manifest["traces"] == 6 and manifest["seed"] == 5 and manifest["parts"][0]["traces"] == 6
    assert manifest["reference_revision"] == reference_revision() and len(manifest["reference_revision"]) == 16


def test_generation_restricts_the_configs_and_keeps_the_default_draw(tmp_path: Path) -> None:
    """``--generation`` draws configs of that generation only (an implementation that runs one,
    e.g. Kafka 4.x); without it the corpus is the one the seed always gave."""
    out = tmp_path / "de"
    main(["generate", "--traces", "40", "--seed", "5", "--generation", "diverging-epoch", "--out", str(out)])
    lines = gzip.decompress((out / "part-00000.jsonl.gz").read_bytes()).decode().splitlines()
    assert {json.loads(line)["config"]["generation"] for line in lines} == {"diverging-epoch"}
    manifest = json.loads((out / "corpus-manifest.json").read_text())
    assert manifest["generations"] == ["diverging-epoch"]
    plain = [generate_trace(5, i) for i in range(40)]
    assert len({r["config"]["generation"] for r in plain}) == 3
    assert [r["shape"] for r in plain] == [json.loads(line)["shape"] for line in lines]


def test_shape_weights_choose_the_mix() -> None:
    mix = parse_mix([f"{name}=0" for name in parse_mix([])] + ["long-log=1"])
    shapes = {generate_trace(1, i, mix)["shape"] for i in range(10)}
    assert shapes == {"long-log"}
    lengths = [len(generate_trace(1, i, mix)["steps"]) for i in range(10)]
    assert min(lengths) >= 30


def test_the_default_mix_covers_the_dimensions_users_need() -> None:
    records = [generate_trace(9, i) for i in range(150)]
    configs = [r["config"] for r in records]
    assert {len(c["replicas"]) for c in configs} == {2, 3, 4, 5}
    assert {c["generation"] for c in configs} == {"hw-truncation", "leader-epoch", "diverging-epoch"}
    assert {c["unclean_leader_election"] for c in configs} == {True, False}
    assert any(c["min_insync_replicas"] == len(c["replicas"]) > 1 for c in configs)
    steps = [s["do"] for r in records for s in r["steps"]]
    assert {s.get("acks", "all") for s in steps if s["kind"] == "produce"} == {"0", "1", "all"}
    assert any(s["kind"] == "crash" and "unflushed_from" in s for s in steps), "power failures"
    assert {r["shape"] for r in records} >= {"mixed", "crash-mid-fetch", "elections", "lag-expiry", "power-failure"}


# --- replay --------------------------------------------------------------------------------


def test_every_generated_trace_passes_the_reference(corpus: Path, tmp_path: Path) -> None:
    agg = replay(corpus, ["reference"], out=tmp_path)
    assert outcomes(agg, "reference") == {"passed": 60}
    assert len(per_trace(tmp_path)) == 60
    assert sum(agg.steps.values()) > 60 * 8


def test_the_process_pool_gives_the_inline_totals(corpus: Path) -> None:
    impls = ["reference", "zoo:no-purgatory"]
    inline, pool = replay(corpus, impls), replay(corpus, impls, backend="processes")
    assert inline.counts == pool.counts and inline.rules == pool.rules
    assert [x[0] for x in inline.first] == [x[0] for x in pool.first]


def test_a_mutant_fails_exactly_the_traces_where_the_reference_fires_its_rule(corpus: Path, tmp_path: Path) -> None:
    """no-purgatory answers every fetch at once: it must fail precisely the traces in which
    the reference parks a fetch (FETCH-PARK-1), and no other."""
    replay(corpus, ["reference", "zoo:no-purgatory"], out=tmp_path)
    records = per_trace(tmp_path)
    fires = {t for (impl, t), r in records.items() if impl == "reference" and "FETCH-PARK-1" in r["rules"]}
    failed = {t for (impl, t), r in records.items() if impl == "zoo:no-purgatory" and r["outcome"] == "failed"}
    assert fires and failed == fires
    assert all(
        "FETCH-PARK-1" in (r["divergence"] or {}).get("rules", ["FETCH-PARK-1"])
        for (impl, _), r in records.items()
        if impl == "zoo:no-purgatory" and r["outcome"] == "failed"
    )


def test_failures_are_counted_by_first_difference_in_every_backend(corpus: Path, tmp_path: Path) -> None:
    """Every failing trace counts under its signature (not only the first N kept for the
    report), the counts sum to the failures, the examples are the first ids in corpus
    order whatever the partitioning, and the totals survive the results file's JSON."""
    impls = ["reference", "zoo:no-purgatory"]
    inline, pool = replay(corpus, impls, out=tmp_path), replay(corpus, impls, backend="processes")
    assert inline.signatures == pool.signatures and inline.examples == pool.examples
    failed = outcomes(inline, "zoo:no-purgatory")["failed"]
    mine = {sig: n for (impl, sig), n in inline.signatures.items() if impl == "zoo:no-purgatory"}
    assert failed and sum(mine.values()) == failed
    assert not any(impl == "reference" for impl, _ in inline.signatures)
    records = per_trace(tmp_path)
    failing = sorted(
        (r["source"], t) for (impl, t), r in records.items() if impl == "zoo:no-purgatory" and r["outcome"] == "failed"
    )
    examples = [t for key, items in inline.examples.items() for _, t in items]
    assert failing[0][1] in examples
    assert all(len(items) <= 3 for items in inline.examples.values())
    back = type(inline).from_json(json.loads(json.dumps(inline.to_json())))
    assert back.signatures == inline.signatures and back.examples == inline.examples


def test_malformed_lines_are_counted_with_file_and_line(tmp_path: Path) -> None:
    good = [dumps(generate_trace(1, i)) for i in range(3)]
    path = tmp_path / "c.jsonl"
    path.write_text("\n".join([good[0], "{oops", good[1], "", '{"id": "x"}', good[2]]) + "\n")
    agg = replay(path, ["reference"], out=tmp_path / "res")
    assert outcomes(agg, "reference") == {"passed": 3, "errored": 2}
    assert agg.malformed == 2
    reasons = [r["reason"] for _, r, _ in agg.first]
    assert any(f"{path}:2: (json)" in x for x in reasons) and any(f"{path}:5: config" in x for x in reasons)


def test_the_bundled_fixtures_replay_as_a_corpus() -> None:
    agg = replay(FIXTURES_DIR, ["reference"])
    cases, problems = load_fixtures([FIXTURES_DIR])
    assert not problems and outcomes(agg, "reference") == {"passed": len(cases)}


def test_a_crashing_hanging_or_garbage_adapter_errors_its_traces_only(corpus: Path) -> None:
    impls = [f"exec:{sys.executable} {BROKEN} {mode}" for mode in ("crash-on-third-step", "garbage")]
    one = corpus / "part-00000.jsonl.gz"
    agg = replay(one, ["reference", *impls], backend="processes")
    assert outcomes(agg, "reference") == {"passed": 20}
    for impl in impls:
        counts = outcomes(agg, impl)
        assert sum(counts.values()) == 20 and counts.get("errored", 0) >= 15, counts


def test_a_hanging_adapter_times_out_per_trace(corpus: Path) -> None:
    splits = plan_splits([corpus / "part-00000.jsonl.gz"], split_lines=3)[:1]
    task = ReplayTask(splits[0], 0, (f"exec:{sys.executable} {BROKEN} hang",), 0.3, None)
    agg = replay_split(task)
    assert outcomes(agg, task.impls[0]) == {"errored": 3}


def test_rerun_replays_only_the_failed_and_errored_traces(corpus: Path, tmp_path: Path) -> None:
    out = tmp_path / "first"
    code = cli("replay", "--corpus", corpus, "--impl", "zoo:no-purgatory", "--impl", "reference",
               "--backend", "inline", "--out", out, "--no-progress", "--format", "json")  # fmt: skip
    assert code == 1
    failed = {k for k, r in per_trace(out / "traces").items() if r["outcome"] != "passed"}
    code = cli("replay", "--corpus", corpus, "--impl", "zoo:no-purgatory", "--impl", "reference",
               "--backend", "inline", "--out", tmp_path / "again", "--rerun", out, "--no-progress")  # fmt: skip
    assert code == 1
    assert set(per_trace(tmp_path / "again" / "traces")) == failed


def test_save_failures_writes_shrunk_fixtures_that_fail_the_mutant_and_pass_the_reference(
    corpus: Path, tmp_path: Path
) -> None:
    saved = tmp_path / "saved"
    code = cli("replay", "--corpus", corpus / "part-00000.jsonl.gz", "--impl", "zoo:no-purgatory",
               "--backend", "inline", "--out", tmp_path / "o", "--save-failures", saved, "--save-limit", 3,
               "--no-progress")  # fmt: skip
    assert code == 1
    files = sorted(saved.rglob("*.yaml"))
    assert len(files) == 3
    original = {json.loads(x)["id"]: len(json.loads(x)["steps"]) for x in _lines(corpus / "part-00000.jsonl.gz")}
    for file in files:
        doc = yaml.safe_load(file.read_text())
        assert len(doc["steps"]) < original[doc["id"]]
        assert cli("run", "--fixtures", file, "--impl", "reference", "--results", tmp_path / "r.json") == 0
        assert cli("run", "--fixtures", file, "--impl", "zoo:no-purgatory", "--results", tmp_path / "r.json") == 1
        assert load_fixture_file(file)


def _lines(path: Path) -> list[str]:
    return gzip.decompress(path.read_bytes()).decode().splitlines()


def test_trace_validation_finds_the_recorded_implementations_defect(tmp_path: Path) -> None:
    """A corpus recorded from no-purgatory, replayed on the reference, fails exactly where
    the recording parked nothing but the reference parks a fetch."""
    recorded = make_corpus(tmp_path / "rec", 20, record_from="zoo:no-purgatory")
    first = json.loads(_lines(recorded / "part-00000.jsonl.gz")[0])
    assert first["provenance"]["recorded_from"] == "zoo:no-purgatory"
    agg = replay(recorded, ["reference"], out=tmp_path / "res")
    assert outcomes(agg, "reference").get("failed", 0) > 0
    failed = [r for _, r, _ in agg.first if r["outcome"] == "failed"]
    assert all("parked_fetches" in json.dumps(r["divergence"]) for r in failed)


def test_the_results_document_renders_in_every_format(corpus: Path, tmp_path: Path) -> None:
    from datetime import UTC, datetime

    from conformance import reports

    agg = replay(corpus, ["reference", "zoo:no-purgatory"])
    doc = document(
        agg,
        ["reference", "zoo:no-purgatory"],
        started=datetime.now(UTC),
        duration_s=1.0,
        selection={},
        corpus={"lines": 60, "files": 3},
    )
    text = reports.render(doc, "terminal", rules=True)
    assert "60/60 passed" in text and "FETCH-PARK-1" in text and "diverged here" in text
    assert "zoo:no-purgatory / s7-" in text, "failures are listed with their trace ids"
    for fmt in reports.FORMATS:
        assert reports.render(doc, fmt)


def test_replay_cli_reports_bad_input_in_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["replay", "--corpus", str(tmp_path / "none"), "--impl", "reference", "--backend", "inline"]) == 2
    assert "no such file or folder" in capsys.readouterr().err
    assert main(["replay", "--corpus", str(FIXTURES_DIR), "--impl", "nope", "--backend", "inline"]) == 2
    assert "unknown implementation" in capsys.readouterr().err


def test_missing_java_is_one_clear_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("JAVA_HOME", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))
    assert main(["replay", "--corpus", str(FIXTURES_DIR), "--impl", "reference", "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("kconform: Spark needs Java 17") and len(err.splitlines()) == 1


def test_an_old_java_is_refused_in_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from conformance.corpus.spark import SparkSetupError, check_java

    fake = tmp_path / "bin" / "java"
    fake.parent.mkdir()
    fake.write_text("#!/bin/sh\necho 'openjdk version \"11.0.2\" 2019-01-15' >&2\n")
    fake.chmod(0o755)
    monkeypatch.setenv("JAVA_HOME", str(tmp_path))
    with pytest.raises(SparkSetupError, match=r"is Java 11; Spark 4 needs Java 17 or 21"):
        check_java()


def test_progress_reports_done_total_rate_and_eta() -> None:
    import io

    from conformance.corpus.progress import Progress

    stream = io.StringIO()
    progress = Progress(2000, "traces", stream, interval_s=0)
    progress.update(500)
    line = stream.getvalue().strip()
    assert line.startswith("[500/2000 traces 25%]") and "/s" in line and "ETA" in line


def test_a_corpus_made_by_another_reference_revision_is_named_in_the_replay(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = tmp_path / "old"
    assert cli("generate", "--traces", 3, "--seed", 2, "--out", folder, "--backend", "inline", "--no-progress") == 0
    manifest = json.loads((folder / "corpus-manifest.json").read_text())
    manifest["reference_revision"] = "0123456789abcdef"
    (folder / "corpus-manifest.json").write_text(json.dumps(manifest))
    capsys.readouterr()
    code = cli("replay", "--corpus", folder, "--impl", "reference", "--backend", "inline",
               "--out", tmp_path / "r", "--no-progress", "--format", "json")  # fmt: skip
    assert code == 0
    err = capsys.readouterr().err
    assert f"{folder} was generated by reference revision 0123456789abcdef" in err
    doc = json.loads((tmp_path / "r" / "results.json").read_text())
    assert doc["corpus"]["generated_by_other_revisions"] == {str(folder): "0123456789abcdef"}
    assert doc["corpus"]["reference_revision"] == reference_revision()


def test_a_large_mapping_changed_by_a_corpus_step_names_its_changed_keys() -> None:
    """``apply_changes``: a copied mapping of more than ``AMENDED_FROM`` entries (the produce
    outcomes of a long trace) is ``Amended`` from the previous one with the keys the step
    set or removed, so the judge reads only those; a small one is a plain copy."""
    outcomes = {f"p{i}": "acked" for i in range(AMENDED_FROM + 1)}
    before = {"producer": outcomes, "replicas": {"A": {"leo": 1}}}
    after = apply_changes(
        before,
        [[["producer", "p1"], "pending"], [["producer", "p2"]], [["replicas", "A", "leo"], 2]],
        "steps[1].changes",
    )
    assert changed_keys(after["producer"], outcomes) == ["p1", "p2"]
    assert after["producer"] == {k: "pending" if k == "p1" else v for k, v in outcomes.items() if k != "p2"}
    assert type(after["replicas"]) is dict and changed_keys(after["replicas"], before["replicas"]) is None
    assert before["producer"] is outcomes and outcomes["p1"] == "acked"  # the input is not changed
