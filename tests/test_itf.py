"""ITF export and import (conformance/corpus/itf.py, docs/itf.md): the round trip fixture -> ITF
-> corpus -> replay gives the same verdicts as the fixtures, the files follow ADR-015
(checked against the format's published examples), and bad files are one located line."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from corpus_helpers import cli
from helpers import bundled_fixtures
from hypothesis import given
from hypothesis import strategies as st

from conformance.corpus.format import CorpusLineError
from conformance.corpus.itf import ItfError, decode, encode, fixture_to_itf, itf_to_record, problems
from conformance.corpus.reading import plan_splits, read_split
from conformance.corpus.replay import ReplayTask, replay_split
from conformance.fixtures.paths import FIXTURES_DIR

ADR_015_EXAMPLE = {
    # The example trace of ADR-015 ("The ITF Format", the MissionariesAndCannibals counterexample), two states
    "#meta": {"source": "MC_MissionariesAndCannibalsTyped.tla"},
    "vars": ["bank_of_boat", "who_is_on_bank"],
    "states": [
        {
            "#meta": {"index": 0},
            "bank_of_boat": "E",
            "who_is_on_bank": {
                "#map": [
                    ["E", {"#set": ["c1_OF_PERSON", "c2_OF_PERSON", "m1_OF_PERSON", "m2_OF_PERSON"]}],
                    ["W", {"#set": []}],
                ]
            },
        },
        {
            "#meta": {"index": 1},
            "bank_of_boat": "W",
            "who_is_on_bank": {
                "#map": [
                    ["E", {"#set": ["c1_OF_PERSON", "m1_OF_PERSON"]}],
                    ["W", {"#set": ["c2_OF_PERSON", "m2_OF_PERSON"]}],
                ]
            },
        },
    ],
}
QUINT_EXAMPLE = {
    # A trace as Quint writes it (the itf crate's test fixture SumTypes0.itf.json): #bigint and variants
    "#meta": {
        "format": "ITF",
        "format-description": "https://apalache.informal.systems/docs/adr/015adr-trace.html",
        "source": "SumTypes.qnt",
        "status": "passed",
        "description": "Created by Quint on Thu Dec 07 2023 11:21:01 GMT+0100 (GMT+01:00)",
        "timestamp": 1701944461444,
    },
    "vars": ["value"],
    "states": [
        {"#meta": {"index": 0}, "value": {"tag": "None", "value": {}}},
        {"#meta": {"index": 1}, "value": {"tag": "Some", "value": {"#bigint": "40"}}},
        {"#meta": {"index": 2}, "value": {"tag": "Some", "value": {"#bigint": "41"}}},
    ],
}


def test_the_published_examples_are_valid_and_so_is_every_export() -> None:
    assert problems(ADR_015_EXAMPLE) == [] and problems(QUINT_EXAMPLE) == []
    for fixture in bundled_fixtures():
        trace = fixture_to_itf(fixture)
        assert problems(trace) == [], fixture.id
        assert set(trace) <= {"#meta", "params", "vars", "states", "loop"}
        assert len(trace["states"]) == len(fixture.steps) + 1
        assert trace["#meta"]["format"] == "ITF"


def test_the_validator_catches_what_adr_015_forbids() -> None:
    bad: dict[str, Any] = {
        "vars": ["x"],
        "states": [{"x": 1.5}, {"y": 1}, {"x": {"#bigint": "1e3"}}, {"x": {"#weird": 1}}],
        "loop": 9,
        "extra": 1,
    }
    found = problems(bad)
    assert "extra: not a field of an ITF trace (#meta, loop, params, states, vars)" in found
    assert "loop: must be the index of a state" in found
    assert "states[0].x: 1.5 is not an ITF expression" in found
    assert "states[1]: no value for the variable x" in found
    assert 'states[2].x: a big integer is {"#bigint": "[-][0-9]+"}' in found
    assert "states[3].x: record field names do not start with # (#weird)" in found


json_values = st.recursive(
    st.none() | st.booleans() | st.integers(min_value=-(2**70), max_value=2**70) | st.text(max_size=5),
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(st.text(max_size=4).filter(lambda k: not k.startswith("#")), inner, max_size=3)
    ),
    max_leaves=12,
)


@given(json_values)
def test_values_round_trip_through_itf_expressions(value: Any) -> None:
    if isinstance(value, dict) and set(value) == {"tag", "value"}:
        return  # a record shaped like a variant is read as the variant (docs/itf.md)
    encoded = encode(value)
    assert problems({"vars": ["v"], "states": [{"v": encoded}]}) == []
    assert decode(json.loads(json.dumps(encoded))) == value


def _replay(corpus: Path, impls: tuple[str, ...]) -> tuple[dict[tuple[str, str], int], dict[tuple[str, str], str]]:
    """Totals per (implementation, status), and the status of every unexpected result by trace id."""
    counts: dict[tuple[str, str], int] = {}
    unexpected: dict[tuple[str, str], str] = {}
    for i, split in enumerate(plan_splits([corpus], 50)):
        agg = replay_split(ReplayTask(split, i, impls, 5.0, None, keep=10_000))
        assert agg.malformed == 0
        for key, n in agg.statuses.items():
            counts[key] = counts.get(key, 0) + n
        for _, result, fixture in agg.first:
            unexpected[(result["implementation"], fixture["id"])] = result["status"]
    return counts, unexpected


def _corpus_id(fixture_id: str) -> str:
    return re.sub(r"[^a-z0-9.-]+", ".", fixture_id.lower()).strip(".-")


def test_fixture_to_itf_to_corpus_replays_to_the_same_verdicts(tmp_path: Path) -> None:
    impls = ("reference", "zoo:acks-all-acked-on-append", "zoo:restart-hw-from-leo", "zoo:no-kip-320-fencing")
    assert cli("itf", "export", FIXTURES_DIR, "--out", tmp_path / "itf") == 0
    assert len(list((tmp_path / "itf").glob("*.itf.json"))) == len(bundled_fixtures())
    assert cli("itf", "import", tmp_path / "itf", "--out", tmp_path / "itf.jsonl") == 0
    counts, unexpected = _replay(FIXTURES_DIR, impls)
    assert len(unexpected) > 10, "the zoo members fail some fixtures: the comparison has teeth"
    for corpus in (tmp_path / "itf", tmp_path / "itf.jsonl"):  # ITF files read directly, and imported
        itf_counts, itf_unexpected = _replay(corpus, impls)
        assert itf_counts == counts
        assert itf_unexpected == {(impl, _corpus_id(fid)): status for (impl, fid), status in unexpected.items()}


def test_an_itf_trace_of_a_model_checker_replays(tmp_path: Path) -> None:
    """A trace as a Quint model would write it for kconform: mbt:: variables, #bigint, a
    partial observation, None where nothing is checked, and a variable of its own."""
    config = {"replicas": ["A", "B"], "generation": "leader-epoch"}
    none = {"tag": "None", "value": {"#tup": []}}
    own = {"model_only": {"#set": []}}
    produce = {"values": ["m0"], "replica": none}
    leo_1 = {"replicas": {"#map": [["A", {"leo": {"#bigint": "1"}}]]}}
    trace = {
        "#meta": {"format": "ITF", "source": "replication.qnt"},
        "params": ["config"],
        "vars": ["mbt::actionTaken", "mbt::nondetPicks", "observation", "rejected", "model_only"],
        "states": [
            {"config": encode(config), "mbt::actionTaken": "init", "mbt::nondetPicks": {}, "observation": none,
             "rejected": "", **own},
            {"mbt::actionTaken": "produce", "mbt::nondetPicks": produce, "observation": leo_1, "rejected": "", **own},
            {"mbt::actionTaken": "restart", "mbt::nondetPicks": {"replica": {"tag": "Some", "value": "B"}},
             "observation": none, "rejected": "B is online", **own},
        ],
    }  # fmt: skip
    assert problems(trace) == []
    (tmp_path / "model.itf.json").write_text(json.dumps(trace), encoding="utf-8")
    record = itf_to_record(trace, "model.itf.json")
    expected = {"do": {"kind": "produce", "values": ["m0"]}, "expect": {"replicas": {"A": {"leo": 1}}}}
    assert record["steps"][0] == expected
    assert record["steps"][1] == {"do": {"kind": "restart", "replica": "B"}, "expect_rejected": "B is online"}
    counts, _ = _replay(tmp_path, ("reference",))
    assert counts == {("reference", "PASS"): 1}


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("{not json", "model.itf.json:1: line 1 column 2: not JSON: Expecting property name"),
        ('{"vars": ["x"], "states": [{}]}', "model.itf.json:1: states[0]: no value for the variable x"),
        ('{"vars": [], "states": [{}, {}]}', "model.itf.json:1: states[0]: no config"),
        (
            json.dumps({"params": ["config"], "vars": ["action", "observation"], "states": [
                {"config": {"replicas": ["A"]}, "action": {"kind": "init"}, "observation": {}},
                {"action": {"kind": "jump"}, "observation": {}}]}),
            "model.itf.json:1: states[1].do.kind: ",
        ),
    ],
)  # fmt: skip
def test_a_bad_itf_file_is_one_located_error(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "model.itf.json"
    path.write_text(text, encoding="utf-8")
    (item,) = [i for s in plan_splits([path]) for i in read_split(s)]
    assert isinstance(item, CorpusLineError)
    assert str(item).replace(str(tmp_path) + "/", "").startswith(message), str(item)


def test_itf_commands_report_bad_input_in_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli("itf", "export", tmp_path / "nowhere", "--out", tmp_path / "o") == 2
    assert cli("itf", "import", tmp_path, "--out", tmp_path / "c.jsonl") == 2
    (tmp_path / "x.itf.json").write_text("[]", encoding="utf-8")
    assert cli("itf", "check", tmp_path) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err
    assert f"{tmp_path / 'nowhere'}: no such file or folder" in err
    assert f"{tmp_path / 'x.itf.json'}: (trace): an ITF trace is a JSON object" in err
    with pytest.raises(ItfError, match=r"^m.itf.json: states: a trace to replay needs"):
        itf_to_record({"vars": [], "states": [{}]}, "m.itf.json")
