"""The user's path (issue 21): every input fault is one ``file[:line]: what`` line or a
counted, located error result, never a traceback; Ctrl-C keeps what finished and
``--rerun`` resumes it to the same results as an uninterrupted replay."""

from __future__ import annotations

import gzip
import json
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from corpus_helpers import cli, make_corpus, per_trace

from conformance import sdk
from conformance.corpus.format import CorpusLineError, parse_line
from conformance.corpus.reading import count_lines, plan_splits, read_split
from conformance.fixtures.loading import load_fixtures
from conformance.fixtures.paths import FIXTURES_DIR
from conformance.implementations.registry import UnknownImplementation, resolve


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_corpus(tmp_path_factory.mktemp("corpus"), 40, part=20)


def _gz_lines(path: Path) -> list[bytes]:
    return gzip.decompress(path.read_bytes()).splitlines(keepends=True)


def _read_all(path: Path, split_lines: int = 1000) -> tuple[list[object], int]:
    splits = plan_splits([path], split_lines)
    items: list[object] = [item for split in splits for item in read_split(split)]
    return items, count_lines(splits)


def _errors(items: list[object]) -> list[str]:
    return [str(i) for i in items if isinstance(i, CorpusLineError)]


# --- corpus files -------------------------------------------------------------------------


@pytest.mark.parametrize("manifest", [False, True])
def test_a_truncated_gzip_part_is_one_located_error_and_the_rest_replays(
    corpus: Path, tmp_path: Path, manifest: bool
) -> None:
    whole = corpus / "part-00001.jsonl.gz"
    shutil.copy(corpus / "part-00000.jsonl.gz", tmp_path / "part-00000.jsonl.gz")
    (tmp_path / "part-00001.jsonl.gz").write_bytes(whole.read_bytes()[: len(whole.read_bytes()) // 3])
    if manifest:
        parts = [{"file": f"part-0000{i}.jsonl.gz", "traces": 20} for i in (0, 1)]
        (tmp_path / "corpus-manifest.json").write_text(json.dumps({"corpus": 1, "parts": parts}))
    items, counted = _read_all(tmp_path, split_lines=4)
    errors = _errors(items)
    assert len(errors) == 1, errors
    assert "part-00001.jsonl.gz:" in errors[0] and "truncated gzip file" in errors[0]
    readable = [i for i in items if not isinstance(i, CorpusLineError)]
    assert len(readable) >= 20, "the whole first part and the readable start of the second replay"
    if not manifest:
        assert counted == len(items), "planned lines = traces read + the one error"


def test_a_file_that_is_not_gzip_is_named_and_counted(tmp_path: Path) -> None:
    (tmp_path / "x.jsonl.gz").write_bytes(b"hello, not gzip\n")
    items, counted = _read_all(tmp_path)
    assert _errors(items) == [
        f"{tmp_path / 'x.jsonl.gz'}:1: (file): not a gzip file (the name ends in .gz); lines from 1 on are not replayed"
    ]
    assert counted == 1


def test_blank_lines_are_not_counted_and_positions_are_file_lines(corpus: Path, tmp_path: Path) -> None:
    good = _gz_lines(corpus / "part-00000.jsonl.gz")
    path = tmp_path / "c.jsonl"
    path.write_bytes(good[0] + b"\n" + good[1][:300] + b"\n" + b"   \n" + b"\xff\xfe{}\n" + good[2])
    items, counted = _read_all(path, split_lines=2)
    assert counted == len(items) == 4, "two blank lines: skipped, not counted"
    cut, utf = _errors(items)
    assert cut.startswith(f"{path}:3: (json): not JSON at column ") and cut.endswith("(the line looks cut short)")
    assert "line 2" not in cut and "char" not in cut
    assert utf == f"{path}:5: (line): not UTF-8: byte 0xff at byte 1 of the line"


def test_a_json_error_is_placed_on_its_own_line() -> None:
    with pytest.raises(CorpusLineError) as info:
        parse_line(b'{"id": "a",, }\n', "c.jsonl", 7)
    assert (
        str(info.value) == "c.jsonl:7: (json): not JSON at column 12: Expecting property name enclosed in double quotes"
    )


def test_replay_of_damaged_parts_exits_1_with_counts_that_add_up(
    corpus: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "bad"
    bad.mkdir()
    shutil.copy(corpus / "part-00000.jsonl.gz", bad)
    (bad / "part-00001.jsonl.gz").write_bytes(b"\x1f\x8b\x08 broken")
    code = cli("replay", "--corpus", bad, "--impl", "reference", "--backend", "inline", "--out", tmp_path / "o",
               "--no-progress")  # fmt: skip
    err = capsys.readouterr().err
    assert code == 1
    assert "Traceback" not in err
    assert "replayed 21 results (21 corpus lines x 1 implementation): 20 passed, 0 failed, 1 errored" in err


# --- implementations, the SDK, fixtures ---------------------------------------------------


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ('raise RuntimeError("boom at import")\n', "importing 'faulty' raised RuntimeError: boom at import (at "),
        ("def f(:\n", "faulty.py:1: syntax error in the adapter module"),
        ("import kconform_no_such_dependency\n", "its import of 'kconform_no_such_dependency' failed"),
    ],
)
def test_an_adapter_module_that_fails_to_import_is_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], source: str, expected: str
) -> None:
    (tmp_path / "faulty.py").write_text(source, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    sys.modules.pop("faulty", None)
    with pytest.raises(UnknownImplementation, match="faulty:adapter: ") as info:
        resolve("faulty:adapter")
    assert expected in str(info.value)
    sys.modules.pop("faulty", None)
    assert cli("run", "--impl", "faulty:adapter") == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1 and expected in err


def test_a_missing_module_still_reads_as_not_found() -> None:
    with pytest.raises(UnknownImplementation, match="cannot import 'kconform_nowhere'"):
        resolve("kconform_nowhere:adapter")


def test_sdk_serve_answers_a_malformed_line_and_keeps_serving() -> None:
    import io

    out = io.StringIO()
    sdk.serve(sdk.Adapter(), io.StringIO('garbage\n[1]\n{"cmd":"close","seq":3}\n'), out)
    replies = [json.loads(line) for line in out.getvalue().splitlines()]
    assert [r["ok"] for r in replies] == [False, False, True]
    assert replies[0]["error"].startswith("request is not JSON") and replies[2]["seq"] == 3


def test_load_fixtures_takes_a_str_and_overlapping_paths() -> None:
    fixtures, problems = load_fixtures(str(FIXTURES_DIR))
    assert fixtures and not problems
    one = next(FIXTURES_DIR.rglob("*.yaml"))
    again, problems = load_fixtures([FIXTURES_DIR, one, str(one)])
    assert not problems and [f.id for f in again] == [f.id for f in fixtures]
    seeds = FIXTURES_DIR / "seeds"
    assert cli("validate", seeds, next(seeds.glob("*.yaml"))) == 0, "a folder and a file inside it: no clash"


# --- Ctrl-C and resume --------------------------------------------------------------------

STOPPER = '''
"""The reference, but SIGINT to this process (a Ctrl-C) at its 25th reset, once per marker."""
import os
import signal
from pathlib import Path

from conformance.implementations.bundled import BUNDLED

RESETS = [0]


def adapter():
    inner = BUNDLED["reference"]()
    reset = inner.reset

    def counting_reset(*args, **kwargs):
        RESETS[0] += 1
        mark = Path("stopper.mark")
        if RESETS[0] == 25 and not mark.exists():
            mark.write_text("stopped")
            os.kill(os.getpid(), signal.SIGINT)
        return reset(*args, **kwargs)

    inner.reset = counting_reset
    return inner
'''


def _replay(tmp: Path, out: str, *extra: str) -> subprocess.CompletedProcess[str]:
    command = [
        sys.executable,
        "-m",
        "conformance.cli.main",
        "replay",
        "--corpus",
        "corpus",
        "--impl",
        "stopper:adapter",
    ]
    command += ["--backend", "inline", "--split-traces", "10", "--out", out, "--no-progress", *extra]
    return subprocess.run(command, cwd=tmp, capture_output=True, text=True, timeout=120)


def _same_results(folder: Path) -> dict[tuple[str, str], tuple[object, ...]]:
    return {k: (r["outcome"], r["status"], r.get("steps_run")) for k, r in per_trace(folder).items()}


def test_an_interrupted_replay_resumed_with_rerun_ends_as_an_uninterrupted_one(corpus: Path, tmp_path: Path) -> None:
    shutil.copytree(corpus, tmp_path / "corpus")
    (tmp_path / "stopper.py").write_text(textwrap.dedent(STOPPER), encoding="utf-8")
    (tmp_path / "stopper.mark").write_text("no interrupt")
    whole = _replay(tmp_path, "whole")
    assert whole.returncode == 0, whole.stderr
    (tmp_path / "stopper.mark").unlink()

    cut = _replay(tmp_path, "cut")
    assert cut.returncode == 130, cut.stderr
    assert "Traceback" not in cut.stderr and "interrupted (Ctrl-C): 2 of 4 splits finished" in cut.stderr
    traces = tmp_path / "cut" / "traces"
    assert not list(traces.glob("*.tmp")), "no temporary files left"
    assert len(per_trace(traces)) == 20, "the two finished splits are kept"
    saved = json.loads((tmp_path / "cut" / "results.json").read_text())
    assert saved["corpus"]["incomplete"] == {"splits_finished": 2, "splits": 4}
    assert (tmp_path / "cut" / "resume.json").exists()

    resumed = _replay(tmp_path, "cut", "--rerun", "cut")
    assert resumed.returncode == 0, resumed.stderr
    assert "resuming: 2 of 4 splits finished earlier are kept" in resumed.stderr
    assert _same_results(traces) == _same_results(tmp_path / "whole" / "traces")
    done = json.loads((tmp_path / "cut" / "results.json").read_text())["corpus"]
    first = json.loads((tmp_path / "whole" / "results.json").read_text())["corpus"]
    for key in ("results_total", "statuses", "counts", "rules", "steps", "unexpected"):
        assert done[key] == first[key], key
    assert "incomplete" not in done and not (tmp_path / "cut" / "resume.json").exists()


def test_resuming_with_another_corpus_is_refused(
    corpus: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "o"
    out.mkdir()
    (out / "resume.json").write_text(json.dumps({"resume": 1, "plan": {"corpus": ["elsewhere"]}, "only": None}))
    code = cli("replay", "--corpus", corpus, "--impl", "reference", "--backend", "inline", "--rerun", out)
    assert code == 2
    assert "interrupted on another corpus" in capsys.readouterr().err


def test_an_interrupted_generate_keeps_whole_parts_and_no_temporary_files(tmp_path: Path) -> None:
    (tmp_path / "stopper.py").write_text(textwrap.dedent(STOPPER), encoding="utf-8")
    command = [sys.executable, "-m", "conformance.cli.main", "generate", "--traces", "60", "--part-traces", "10"]
    command += ["--record-from", "stopper:adapter", "--backend", "inline", "--out", "g", "--no-progress"]
    done = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert done.returncode == 130, done.stderr
    assert "Traceback" not in done.stderr and "interrupted (Ctrl-C)" in done.stderr
    folder = tmp_path / "g"
    assert not list(folder.glob("*.tmp*")), "no temporary part and no progress counter left"
    manifest = json.loads((folder / "corpus-manifest.json").read_text())
    assert manifest["incomplete"] == {"traces_asked": 60}
    parts = sorted(p.name for p in folder.glob("part-*.jsonl.gz"))
    assert parts == [p["file"] for p in manifest["parts"]] and manifest["traces"] == 10 * len(parts) < 60
    items, counted = _read_all(folder)
    assert counted == len(items) == manifest["traces"] and not _errors(items)


# --- tables -------------------------------------------------------------------------------


def test_tables_fit_the_width_without_breaking_an_id_or_a_false() -> None:
    from conformance.reports.fit import fit, visible

    ids = "FETCH-LEADER-5 CTRL-ELECT-2 seed-08b-unclean-election-enabled/leader-epoch"
    rows = [["online", "True", "False", ids], ["hw", "0", "1", "a long explanation " * 6]]
    text = fit(rows, ["field", "old", "new", "rules"], "rounded_outline", width=80)
    assert visible(text) <= 80
    for word in ids.split():
        assert word in text, "an id is never cut"
    assert "False" in text and text.count("True") == 1, "tabulate's maxcolwidths turns 'False' into True"
    narrow = fit([["seed-08b-unclean-election-enabled/leader-epoch"]], ["id"], "simple", width=10)
    assert "seed-08b-unclean-election-enabled/leader-epoch" in narrow, "too narrow: the id stays whole"


def test_explain_shows_a_crashed_replica_offline() -> None:
    from conformance.fixtures.loading import load_fixtures
    from conformance.reports.explain import explain

    fixtures, _ = load_fixtures(FIXTURES_DIR)
    crashed = next(f for f in fixtures if any(fs.do.get("kind") == "crash" for fs in f.steps))
    text = explain(crashed)
    online = [line for line in text.splitlines() if ".online" in line]
    assert online and all("False" in line for line in online if "crash" in line), online


def test_diff_of_two_implementations_says_so_and_compares_fixture_by_fixture(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    seeds = FIXTURES_DIR / "seeds"
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    assert cli("run", "--impl", "reference", "--fixtures", seeds, "--results", a, "--no-progress") == 0
    assert cli("run", "--impl", "zoo:restart-hw-from-leo", "--fixtures", seeds, "--results", b, "--no-progress") == 1
    capsys.readouterr()
    assert cli("diff", a, b) == 1
    out = capsys.readouterr().out
    assert out.startswith("note: the two runs judge different implementations (reference in the old")
    assert "regressions (" in out and "added (" not in out and "removed (" not in out


# --- progress -----------------------------------------------------------------------------


def test_replay_progress_counts_results_as_they_are_written(tmp_path: Path) -> None:
    import io

    from conformance.corpus.progress import Progress, ResultsWatcher

    watcher = ResultsWatcher(tmp_path, Progress(10, "results", io.StringIO()), skip=[2])
    (tmp_path / "part-00000.jsonl.tmp").write_text('{"a":1}\n{"a":2}\n{"a":', encoding="utf-8")
    assert watcher.count() == 2, "a line being written is not counted yet"
    with (tmp_path / "part-00000.jsonl.tmp").open("a", encoding="utf-8") as f:
        f.write("3}\n")
    assert watcher.count() == 3
    (tmp_path / "part-00000.jsonl.tmp").rename(tmp_path / "part-00000.jsonl")
    (tmp_path / "part-00000.done.json").write_text("{}", encoding="utf-8")
    (tmp_path / "part-00002.jsonl").write_text('{"kept":1}\n', encoding="utf-8")
    assert watcher.count() == 3, "a finished split counts once; kept splits not at all"


def test_an_unreachable_spark_master_is_one_line_at_once(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed once the block ends: nothing listens there
    master = f"spark://127.0.0.1:{port}"
    code = cli("replay", "--corpus", FIXTURES_DIR / "seeds", "--impl", "reference", "--master", master,
               "--out", tmp_path / "o", "--no-progress")  # fmt: skip
    err = capsys.readouterr().err
    assert code == 2 and err.startswith(f"kconform: cannot reach the Spark master {master} (")
    assert len(err.strip().splitlines()) == 1


def test_the_replay_summary_says_why_traces_were_skipped(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "o"
    code = cli("replay", "--corpus", FIXTURES_DIR / "seeds", "--impl", "reference-hw-truncation",
               "--backend", "inline", "--out", out, "--no-progress")  # fmt: skip
    assert code == 0
    corpus = json.loads((out / "results.json").read_text())["corpus"]
    reasons = {r["reason"]: r["traces"] for r in corpus["skip_reasons"]}
    skipped = sum(n for key, n in corpus["statuses"].items() if key.endswith("/SKIP"))
    assert skipped and sum(reasons.values()) == skipped
    assert all("not supported" in reason for reason in reasons)
    assert "; skipped: " in capsys.readouterr().out


def test_generate_progress_counts_traces_as_parts_grow(tmp_path: Path) -> None:
    import io

    from conformance.corpus.progress import PartsWatcher, Progress

    watcher = PartsWatcher(tmp_path, Progress(30, "traces", io.StringIO()), {"part-00000.jsonl.gz": 10, "p1": 20})
    (tmp_path / "p1.tmp.count").write_text("7", encoding="ascii")
    assert watcher.count() == 7
    (tmp_path / "part-00000.jsonl.gz").write_bytes(b"")
    assert watcher.count() == 17, "a finished part counts whole"
