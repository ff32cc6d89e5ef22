"""fuzz and explore from the user's side: machine-readable results (--json), an adapter
that crashes mid-run reported with its stderr, and Ctrl-C keeping what finished."""

from __future__ import annotations

import dataclasses
import json
import sys
from pathlib import Path
from typing import Any

import pytest

import reference_impl
from conformance.adapters.in_process import FunctionAdapter, ReferenceAdapter, StepRefused
from conformance.cli.main import main
from conformance.search.stateful import fuzz_all
from reference_impl import Generation

BROKEN = Path(__file__).parent / "fakes" / "broken_adapter.py"


def _run(capsys: pytest.CaptureFixture[str], *args: object) -> tuple[int, str, str]:
    code = main([str(a) for a in args])
    out, err = capsys.readouterr()
    return code, out, err


def test_fuzz_json_states_the_verdict_and_the_failures(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, out, _ = _run(
        capsys,
        "fuzz",
        "--impl",
        "shape-hw-decrease",
        "--level",
        "safety",
        "--examples",
        100,
        "--seed",
        1,
        "--json",
        "--witness",
        tmp_path / "w.yaml",
    )
    doc = json.loads(out)
    assert code == 1 and doc["kconform_fuzz"] == 1 and doc["verdict"] == "failed"
    assert doc["failures"] and doc["failures"][0]["signature"].startswith("safety:SAFE-")
    assert Path(doc["failures"][0]["witness"]).is_file()
    assert doc["runs"] == 100 and doc["exercised"]["steps"]
    code, out, _ = _run(
        capsys, "fuzz", "--impl", "reference", "--examples", 10, "--seed", 1, "--json", "--witness", tmp_path / "r.yaml"
    )
    assert code == 0 and json.loads(out)["verdict"] == "met"


def test_fuzz_runs_a_generation_the_implementation_implements(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """Without --generation, fuzz takes leader-epoch, or else the implementation's first; a
    generation it does not implement is refused at once (every run would be skipped)."""
    code, out, _ = _run(
        capsys,
        "fuzz",
        "--impl",
        "reference-hw-truncation",
        "--examples",
        5,
        "--seed",
        1,
        "--json",
        "--witness",
        tmp_path / "w.yaml",
    )
    doc = json.loads(out)
    assert code == 0 and doc["generation"] == "hw-truncation" and doc["runs"] == 5 and doc["verdict"] == "met"
    code, _, err = _run(capsys, "fuzz", "--impl", "reference-hw-truncation", "--generation", "leader-epoch")
    assert code == 2 and "does not implement leader-epoch (it implements hw-truncation)" in err


def test_explore_json_per_generation(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, out, _ = _run(
        capsys,
        "explore",
        "--impl",
        "shape-round-only",
        "--level",
        "settled",
        "--depth",
        3,
        "--generation",
        "leader-epoch",
        "--json",
        "--out",
        tmp_path,
    )
    doc = json.loads(out)
    assert code == 0 and doc["kconform_explore"] == 1
    (gen,) = doc["generations"]
    assert gen["generation"] == "leader-epoch" and gen["paths_replayed"] > 0 and gen["disagreement"] is None
    assert gen["safety"].startswith("safety established")


def test_a_crash_mid_run_is_reported_with_its_stderr(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    impl = f"exec:{sys.executable} {BROKEN} crash-on-third-step"
    code, out, err = _run(
        capsys, "fuzz", "--impl", impl, "--examples", 3, "--seed", 1, "--no-progress", "--witness", tmp_path / "w.yaml"
    )
    assert code == 1
    assert "the implementation failed" in out and "crashing on purpose at step 3" in out
    assert "not deterministic" not in out + err and "cannot start" not in out + err


def test_ctrl_c_keeps_the_runs_that_finished() -> None:
    calls = {"n": 0}

    def apply(state: Any, step: dict[str, Any]) -> Any:
        calls["n"] += 1
        if calls["n"] > 200:  # the user presses Ctrl-C during a later run
            raise KeyboardInterrupt
        try:
            return reference_impl.apply(state, reference_impl.step_from_dict(step))
        except reference_impl.StepRejected as exc:
            raise StepRefused(exc.reason, exc.rule) from None

    adapter = FunctionAdapter(
        dataclasses.replace(ReferenceAdapter().describe(), name="interrupted", initial_state=False),
        init=lambda config: reference_impl.initial_state(reference_impl.config_from_dict(config)),
        apply=apply,
        observe=reference_impl.observe,
    )
    report = fuzz_all(adapter, Generation.LEADER_EPOCH, examples=100, steps=10, seed=1)
    assert report.interrupted and 0 < report.exercised.runs < 100


def test_explore_ctrl_c_shows_the_generations_that_finished(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    import conformance.search.explore_parallel as explore_module

    real = explore_module.search
    calls = {"n": 0}

    def interrupted_second(*args: Any, **kwargs: Any) -> Any:
        calls["n"] += 1
        if calls["n"] == 2:
            raise KeyboardInterrupt
        return real(*args, **kwargs)

    monkeypatch.setattr(explore_module, "search", interrupted_second)
    code, out, _ = _run(capsys, "explore", "--depth", 2, "--out", tmp_path, "--no-progress")
    assert code == 130
    assert "hw-truncation" in out and "INTERRUPTED (Ctrl-C): 1 generation(s) finished" in out


def test_explore_alone_merges_outputs_on_the_cores_available(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Without --impl, explore holds states that differ only in their outputs as one
    (``merge_outputs``) and searches on the cores available, at most four; with --impl,
    on one process, outputs kept (the tree it replays must show every answer)."""
    import conformance.corpus.backends as backends
    import conformance.search.explore_parallel as explore_module
    from conformance.search.explore import explore

    real = explore_module.search
    asked: list[tuple[int, bool, bool]] = []

    def spy(*args: Any, **kwargs: Any) -> Any:
        asked.append((kwargs["workers"], kwargs["merge_outputs"], kwargs["tree"]))
        return real(*args, **kwargs)

    monkeypatch.setattr(explore_module, "search", spy)
    monkeypatch.setattr(backends, "default_workers", lambda: 16)
    alone = ["explore", "--depth", 4, "--generation", "leader-epoch", "--json", "--out", tmp_path]
    code, out, _ = _run(capsys, *alone)
    (gen,) = json.loads(out)["generations"]
    config = reference_impl.Config(
        replicas=("A", "B"), generation=Generation.LEADER_EPOCH, replica_high_watermark_checkpoint_interval_ms=0
    )
    merged, _ = explore(config, 4, merge_outputs=True)
    kept, _ = explore(config, 4)
    assert code == 0 and gen["states"] == merged.states < kept.states and gen["levels"] == merged.levels
    assert gen["outputs_merged"] is True
    code, _, _ = _run(capsys, *alone, "--workers", 1)
    code, out, _ = _run(capsys, *alone, "--impl", "reference", "--workers", 3)
    (gen,) = json.loads(out)["generations"]
    assert code == 0 and asked == [(4, True, False), (1, True, False), (1, False, True)]
    assert gen["outputs_merged"] is False and gen["states"] == kept.states


def test_a_shrink_candidate_with_no_step_left_is_not_a_skipped_run() -> None:
    """Shrinking a failure at step 1 tries the run without it: nothing to run, which is not
    a run the implementation's limits skipped (it was reported so, with an empty reason)."""
    from conformance.judging.runner import run_fixture
    from conformance.search.stateful import Judge
    from conformance.search.walk import walk

    adapter = ReferenceAdapter()
    judge = Judge(adapter, Generation.LEADER_EPOCH)
    config = reference_impl.config_from_dict({"replicas": ["A", "B"], "generation": "leader-epoch"})
    assert judge.replay(config, []) is None
    assert judge.stats.shrink_runs == 1 and not judge.stats.skipped
    empty = walk(config, [], "empty", source="test").fixture
    result = run_fixture(adapter, adapter.describe(), empty, "reference")
    assert (result.outcome, result.reason) == ("skipped", "nothing to run: no steps")
