"""Malformed fixtures give ``file:line: field: message``, all problems at once, never a
traceback; YAML is loaded safely."""

from __future__ import annotations

import copy
import json
import random
from pathlib import Path

import pytest
from helpers import TINY_FIXTURE

from conformance.fixtures.loading import FixtureError, load_fixture_file, load_fixtures

GOOD = TINY_FIXTURE


def write(tmp_path: Path, text: str, name: str = "f.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def problems(tmp_path: Path, text: str) -> list[str]:
    with pytest.raises(FixtureError) as info:
        load_fixture_file(write(tmp_path, text))
    return [str(p) for p in info.value.problems]


def test_good_fixture_loads(tmp_path: Path) -> None:
    [fixture] = load_fixture_file(write(tmp_path, GOOD))
    assert fixture.id == "tiny" and fixture.steps[0].line == 7


def test_unknown_field_in_a_step(tmp_path: Path) -> None:
    text = GOOD.replace("  - do: {kind: produce, values: [m0]}", "  - do: {kind: produce, values: [m0], ack: 1}")
    [problem] = problems(tmp_path, text)
    assert problem.startswith(f"{tmp_path / 'f.yaml'}:7: steps[0].do: ")
    assert "ack" in problem


def test_wrong_type_points_at_the_field_line(tmp_path: Path) -> None:
    text = GOOD.replace("      replicas: {A: {leo: 1}}", "      replicas:\n        A:\n          leo: one")
    [problem] = problems(tmp_path, text)
    assert ":11: steps[0].expect.replicas.A.leo: 'one' is not of type 'integer'" in problem


def test_unknown_step_kind_and_missing_title_are_both_reported(tmp_path: Path) -> None:
    text = GOOD.replace("title: A tiny fixture\n", "").replace("kind: produce", "kind: publish")
    found = problems(tmp_path, text)
    assert any(": (document): 'title' is required" in p for p in found)
    assert any(":6: steps[0].do.kind: 'publish' is not one of" in p for p in found)


def test_unknown_replica_is_caught_after_the_schema(tmp_path: Path) -> None:
    text = GOOD + "  - do: {kind: fetch, replica: Z}\n"
    [problem] = problems(tmp_path, text)
    assert ":10: steps[1].do.replica: unknown replica 'Z'" in problem


def test_bad_config_value(tmp_path: Path) -> None:
    text = GOOD.replace("  replicas: [A, B]", "  replicas: [A, B]\n  min_insync_replicas: 3")
    [problem] = problems(tmp_path, text)
    assert ":6: config.min_insync_replicas: must be between 1 and the number of replicas (2), got 3" in problem


def test_yaml_syntax_error(tmp_path: Path) -> None:
    [problem] = problems(tmp_path, GOOD.replace("title: A tiny fixture", "title: [unclosed"))
    assert ":3: (yaml): " in problem


def test_duplicate_key(tmp_path: Path) -> None:
    [problem] = problems(tmp_path, GOOD.replace("source: test", "source: test\nsource: again"))
    assert ":4: source: duplicate key" in problem


def test_unsafe_yaml_tags_are_refused(tmp_path: Path) -> None:
    [problem] = problems(tmp_path, GOOD.replace("title: A tiny fixture", "title: !!python/object/apply:os.getcwd []"))
    assert "(yaml)" in problem and "python/object" in problem


def test_empty_file_and_not_a_mapping(tmp_path: Path) -> None:
    assert problems(tmp_path, "") == [f"{tmp_path / 'f.yaml'}:1: (document): the file is empty"]
    [problem] = problems(tmp_path, "- just\n- a list\n")
    assert "(document): ['just', 'a list'] is not of type 'object'" in problem


def test_duplicate_ids_across_files(tmp_path: Path) -> None:
    write(tmp_path, GOOD, "a.yaml")
    write(tmp_path, GOOD, "b.yaml")
    fixtures, found = load_fixtures([tmp_path])
    assert len(fixtures) == 1
    assert [str(p) for p in found] == [
        f"{tmp_path / 'b.yaml'}:1: id: id 'tiny' is already used by {tmp_path / 'a.yaml'}"
    ]


def test_generations_expand_to_one_case_each(tmp_path: Path) -> None:
    text = GOOD.replace("config:", "generations: [hw-truncation, diverging-epoch]\nconfig:")
    cases = load_fixture_file(write(tmp_path, text))
    assert [c.id for c in cases] == ["tiny/hw-truncation", "tiny/diverging-epoch"]


def _mutants(doc: object, rng: random.Random) -> object:
    """``doc`` with one random change somewhere inside: a key dropped or added, a value
    swapped for one of another type."""
    doc = copy.deepcopy(doc)
    spots: list[tuple[object, object]] = []

    def walk(node: object) -> None:
        if isinstance(node, dict):
            for key, value in node.items():
                spots.append((node, key))
                walk(value)
        elif isinstance(node, list):
            for i, value in enumerate(node):
                spots.append((node, i))
                walk(value)

    walk(doc)
    container, key = rng.choice(spots)
    change = rng.randrange(4)
    if change == 0 and isinstance(container, dict):
        del container[key]
    elif change == 1 and isinstance(container, dict):
        container["surprise"] = 1
    else:
        container[key] = rng.choice([None, 7, -1, "x", "fetch", [], {}, True, ["A"], {"kind": "tick"}])  # type: ignore[index]
    return doc


def test_the_fast_schema_check_agrees_with_the_full_schema() -> None:
    """``_fits_fast`` (each step's ``do`` checked against its own kind's rules) accepts
    exactly what the full fixture schema accepts: on every bundled fixture file, and on
    random one-change mutants of every step found in them (each in a one-step fixture)."""
    import yaml

    from conformance.fixtures.loading import _fits_fast, fixture_files
    from conformance.fixtures.paths import FIXTURES_DIR
    from conformance.fixtures.schemas import validator

    full = validator("fixture")
    rng = random.Random(9)
    steps: dict[str, dict[str, object]] = {}
    for path in fixture_files([FIXTURES_DIR]):
        doc = yaml.load(path.read_text(encoding="utf-8"), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
        assert _fits_fast(doc) and full.is_valid(doc), path
        for step in doc["steps"]:
            steps.setdefault(json.dumps(step["do"], sort_keys=True), step)
    disagreements = []
    invalid = 0
    for step in steps.values():
        for _ in range(3):
            mutant = _mutants({"id": "m", "title": "m", "source": "m", "steps": [step]}, rng)
            fits = full.is_valid(mutant)
            invalid += not fits
            if _fits_fast(mutant) != fits:
                disagreements.append(mutant)
    assert not disagreements[:3]
    assert invalid > 80  # the mutants do reach the schema's rules
