"""One judge: every command gives the same verdict on the same run.

The same generated traces are judged, for several implementations (the reference, the
example shapes with conventions, role fields and whole rounds, a defective shape, zoo
members) and at every level, through each path a user can take:

- ``kconform run``: the trace as a YAML fixture file, loaded and run;
- ``kconform replay``: the trace as a corpus line, replayed by a worker (``replay_split``);
- ``kconform fuzz``: the trace's steps replayed by fuzz's judge (``stateful.Judge.replay``);
- ``kconform explore``: the trace's steps as an explored path (``explore._replay_one``);

each ending with the fair suffix whose PROGRESS-* properties fuzz and explore check
(``run --check-progress``, ``replay --check-progress``),

and the verdicts (passed or not, and the step of the first failure) must be identical.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from conformance.corpus.format import dumps
from conformance.corpus.generate import generate_trace
from conformance.corpus.reading import plan_splits
from conformance.corpus.replay import ReplayTask, import_roots, replay_split
from conformance.fixtures.format import CURRENT_FORMAT
from conformance.fixtures.loading import load_fixture_file
from conformance.implementations.registry import resolve
from conformance.judging.runner import run_fixture
from conformance.search.explore import Exploration, edges, explore, replay
from conformance.search.explore import _replay_one as explore_one
from conformance.search.stateful import Judge
from conformance.search.walk import walk
from reference_impl import Config, Generation, Step, step_from_dict

IMPLS = (
    "reference",
    "shape-round-only",
    "shape-epochs-from-1",
    "shape-early-answer",
    "shape-hw-decrease",
    "zoo:hw-counts-every-replica",
    "zoo:no-fetch-purgatory",
    "choice-elect-last-eligible",
    "choice-elect-last-eligible-broken",
    "choice-fetch-one-record",
    "choice-fetch-one-record-broken",
    "choice-consume-one-record",
    "choice-consume-one-record-broken",
    "choice-isr-check-every-step",
    "choice-isr-check-every-step-broken",
    "choice-checkpoint-every-change",
    "choice-checkpoint-every-change-broken",
)
LEVELS = ("exact", "settled", "safety")
TRACES = 16


def _traces() -> list[dict[str, Any]]:
    """``TRACES`` generated traces from a fresh partition (every path can run them) and four
    from a given state (``initial:``: run and replay only; fuzz and explore start fresh)."""
    drawn = [generate_trace(11, i) for i in range(4 * TRACES)]
    fresh = [r for r in drawn if r.get("initial") is None][:TRACES]
    given = [r for r in drawn if r.get("initial") is not None][:4]
    assert len(fresh) == TRACES and given
    return fresh + given


def _steps(record: dict[str, Any]) -> list[Step]:
    return [step_from_dict(s["do"]) for s in record["steps"]]


def _config(record: dict[str, Any]) -> Config:
    from reference_impl import config_from_dict

    return config_from_dict(record["config"])


def _initial(record: dict[str, Any]) -> dict[str, Any] | None:
    """A trace's starting state (``initial:``), every default spelled out, or None."""
    from reference_impl.given import normalise

    raw = record.get("initial")
    return None if raw is None else normalise(_config(record), raw)


def _yaml_fixture(record: dict[str, Any], folder: Path) -> Path:
    """The trace as a fixture file, every step expecting the reference's whole observation."""
    config = _config(record)
    walked = walk(config, _steps(record), record["id"], source="test", initial=_initial(record))
    steps: list[dict[str, Any]] = []
    for i, fs in enumerate(walked.fixture.steps):
        entry: dict[str, Any] = {"do": fs.do}
        if i in walked.rejected:
            entry["expect_rejected"] = walked.rejected[i]
        else:
            entry["expect"] = walked.observations[i]
        steps.append(entry)
    data = {k: v for k, v in config.to_dict().items() if v is not None}
    doc = {
        "id": record["id"],
        "title": "a generated trace",
        "source": "tests/test_one_judge.py",
        "format": CURRENT_FORMAT,
        "config": data,
    }
    if record.get("initial") is not None:
        doc["initial"] = record["initial"]
    doc["steps"] = steps
    path = folder / f"{record['id']}.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False), encoding="utf-8")
    return path


def _verdict(passed: bool, step: int | None) -> tuple[bool, int | None]:
    return (True, None) if passed else (False, step)


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> tuple[list[dict[str, Any]], Path, Path]:
    folder = tmp_path_factory.mktemp("one-judge")
    records = _traces()
    lines = folder / "corpus.jsonl"
    lines.write_text("".join(dumps(r) + "\n" for r in records), encoding="utf-8")
    fixtures = folder / "fixtures"
    fixtures.mkdir()
    for record in records:
        _yaml_fixture(record, fixtures)
    return records, lines, fixtures


@pytest.mark.parametrize("level", LEVELS)
@pytest.mark.parametrize("impl", IMPLS)
def test_run_replay_fuzz_and_explore_agree(
    impl: str, level: str, corpus: tuple[list[dict[str, Any]], Path, Path], tmp_path: Path
) -> None:
    records, lines, fixtures = corpus
    adapter = resolve(impl)
    description = adapter.describe()
    by_path: dict[str, dict[str, tuple[bool, int | None]]] = {"run": {}, "replay": {}, "fuzz": {}, "explore": {}}
    for record in records:
        (fixture,) = load_fixture_file(fixtures / f"{record['id']}.yaml")
        result = run_fixture(adapter, description, fixture, impl, level=level, progress=True)
        step = (result.divergence or {}).get("step") if result.outcome == "failed" else None
        by_path["run"][record["id"]] = _verdict(result.outcome in ("passed", "skipped"), step)
        config, steps = _config(record), _steps(record)
        if record.get("initial") is not None:  # fuzz and explore start from a fresh partition
            by_path["fuzz"][record["id"]] = by_path["explore"][record["id"]] = by_path["run"][record["id"]]
            continue
        judge = Judge(adapter, Generation(config.generation.value), level)
        found = judge.replay(config, steps)
        by_path["fuzz"][record["id"]] = _verdict(found is None, found.step if found else None)
        exploration = Exploration(config=config, depth_limit=len(steps))
        disagreement = explore_one(adapter, description, config, tuple(steps), level, exploration)
        by_path["explore"][record["id"]] = _verdict(disagreement is None, disagreement.step if disagreement else None)
    split = plan_splits([lines], split_lines=1000)[0]
    out = tmp_path / "traces"
    task = ReplayTask(split, 0, (impl,), 5.0, str(out), sys_path=import_roots(), level=level, check_progress=True)
    replay_split(task)
    for line in (out / "part-00000.jsonl").read_text().splitlines():
        r = json.loads(line)
        step = (r.get("divergence") or {}).get("step") if r["outcome"] == "failed" else None
        by_path["replay"][r["fixture"]] = _verdict(r["outcome"] in ("passed", "skipped"), step)
    assert by_path["replay"] == by_path["run"], "replay and run disagree"
    assert by_path["fuzz"] == by_path["run"], "fuzz and run disagree"
    assert by_path["explore"] == by_path["run"], "explore and run disagree"


@pytest.mark.parametrize(
    "impl", ["reference", "zoo:hw-counts-every-replica", "zoo:no-fetch-purgatory", "zoo:acks-all-acked-on-append"]
)
def test_explore_rewinding_finds_what_the_engine_finds(impl: str) -> None:
    """The one faster form: explore steps an in-process implementation along the search tree
    (rewinding its state) instead of replaying each path as a fixture. It must kill exactly
    what the engine kills, at the same depth."""
    from reference_impl import config_from_dict

    config = config_from_dict({"replicas": ["A", "B"], "generation": "leader-epoch"})
    _result, tree = explore(config, 3, 2)
    fast = replay(resolve(impl), config, tree, Exploration(config=config, depth_limit=3), tree=edges(tree))

    class Wrapped:  # not a ReferenceAdapter: the engine's path
        def __init__(self) -> None:
            self.inner = resolve(impl)

        def __getattr__(self, name: str) -> Any:
            return getattr(self.inner, name)

    slow = replay(Wrapped(), config, tree, Exploration(config=config, depth_limit=3))  # type: ignore[arg-type]
    assert (fast is None) == (slow is None)
    if fast is not None and slow is not None:
        assert len(fast.path) == len(slow.path)
    assert (fast is None) == (impl == "reference"), "the members chosen die within depth 3"
