"""Starting from a given state (``initial:``), answers as data, ``logs_match``, protocol 3.

The loader points at the line and field of an impossible initial state (INIT-1..5); the
reference builds what was given; an implementation without the ``initial_state``
capability skips such fixtures (counted, with the reason); the fetch and epoch answers are
observable field by field (OBS-ANSWER-1); the log start moves only by LOG-START-2/3.
"""

from __future__ import annotations

import json
import re
import sys
from collections import Counter
from pathlib import Path

import pytest
from helpers import bundled_fixtures

from conformance.adapters.base import Description
from conformance.adapters.in_process import FunctionAdapter, ReferenceAdapter, StepRefused
from conformance.adapters.stdio import StdioAdapter
from conformance.corpus.format import CorpusLineError, parse_line
from conformance.fixtures.loading import FixtureError, load_fixture_file
from conformance.judging.runner import run_fixtures
from conformance.sdk import Adapter as SdkAdapter
from conformance.sdk import in_process
from reference_impl import (
    InitialStateError,
    StepRejected,
    apply,
    config_from_dict,
    initial_state,
    observe,
    step_from_dict,
)
from reference_impl.given import normalise

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = [sys.executable, str(ROOT / "examples" / "stdio_reference_adapter.py")]
DE = config_from_dict({"replicas": ["A", "B"], "generation": "diverging-epoch"})

FIXTURE = """\
id: given
title: A fixture that starts from a given state
source: test
config:
  generation: diverging-epoch
  replicas: [A, B]
initial:
  leader: A
  leader_epoch: 5
  isr: [A]
  replicas:
    A:
      log: [a@0, b@2, c@5]
      hw: 2
    B: {log: [a@0, b@2, x@4], hw: 0}
steps:
  - do: {kind: fetch_round, replica: B}
    expect:
      replicas: {B: {leo: 2}}
  - do: {kind: fetch_round, replica: B}
    logs_match: [A, B]
"""


def load(tmp_path: Path, text: str) -> list[str]:
    path = tmp_path / "f.yaml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(FixtureError) as info:
        load_fixture_file(path)
    return [str(p) for p in info.value.problems]


def test_a_given_state_is_built_as_described(tmp_path: Path) -> None:
    path = tmp_path / "f.yaml"
    path.write_text(FIXTURE, encoding="utf-8")
    [fixture] = load_fixture_file(path)
    assert fixture.initial is not None
    seen = observe(fixture.start())
    assert (seen["leader"], seen["leader_epoch"], seen["isr"]) == ("A", 5, ["A"])
    a, b = seen["replicas"]["A"], seen["replicas"]["B"]
    assert (a["role"], a["leo"], a["hw"], a["remote_leo"]) == ("leader", 3, 2, {"B": None})
    assert a["epoch_cache"] == [[0, 0], [2, 1], [5, 2]]  # INIT-3: derived from the log
    assert (b["role"], b["leader"], b["leader_epoch"], b["hw"]) == ("follower", "A", 5, 0)
    assert fixture.steps[1].logs_match == ("A", "B")


def test_defaults_are_spelled_out_for_implementations() -> None:
    full = normalise(DE, {"isr": ["A"], "replicas": {"A": {"log_start": 10, "log": ["a@0"], "hw": 11}}})
    assert full["leader"] == "A" and full["leader_epoch"] == 0 and full["isr"] == ["A"]
    a = full["replicas"]["A"]
    assert (a["log_start"], a["leo"], a["hw"], a["checkpoint_hw"]) == (10, 11, 11, 11)
    assert a["epoch_cache"] == [[0, 10]] and a["remote_leo"] == {"B": None}
    assert a["last_caught_up_ms"] == {"B": None}  # not in the ISR: never caught up
    b = full["replicas"]["B"]
    assert (b["log_start"], b["log"], b["hw"], b["leader"], b["fetch_state"]) == (0, [], 0, "A", "fetching")
    assert "remote_leo" not in b
    assert normalise(DE, full) == full  # the explicit form describes the same state


def test_a_leaderless_zookeeper_partition_starts_with_live_replicas_knowing_no_epoch() -> None:
    """INIT-4: under ZooKeeper (LE here) a live replica of a partition with no leader knows no
    epoch, -1, as a broker started into it (LAI-4, RESTART-1); its records may be of any epoch
    up to the controller's. Under KRaft it knows the controller's epoch."""
    le = config_from_dict({"replicas": ["A", "B"], "generation": "leader-epoch"})
    given = {"leader": None, "leader_epoch": 2, "isr": ["A"], "replicas": {"A": {"log": ["a@0", "b@1"], "hw": 1}}}
    full = normalise(le, given)
    assert [full["replicas"][r]["leader_epoch"] for r in "AB"] == [-1, -1]
    state = initial_state(le, full)
    assert [(r["role"], r["leader"], r["leader_epoch"]) for r in observe(state)["replicas"].values()] == [
        ("none", None, -1),
        ("none", None, -1),
    ]
    with pytest.raises(InitialStateError, match=r"knows the partition's leader and epoch \(None, -1\)"):
        normalise(le, {**given, "replicas": {"A": {"log": ["a@0", "b@1"], "hw": 1, "leader_epoch": 2}}})
    de = config_from_dict({"replicas": ["A", "B"], "generation": "diverging-epoch"})
    assert [normalise(de, given)["replicas"][r]["leader_epoch"] for r in "AB"] == [2, 2]
    # An offline one knows -1 by default too, or an older epoch, never the leaderless record's
    # (found by Kafka 2.6 under fuzz from a drawn start; fixture leaderless-start-offline-replica-epoch)
    offline = {**given, "replicas": {**given["replicas"], "B": {"online": False, "log": ["a@0"], "hw": 1}}}
    assert [normalise(le, offline)["replicas"][r]["leader_epoch"] for r in "AB"] == [-1, -1]
    assert [normalise(de, offline)["replicas"][r]["leader_epoch"] for r in "AB"] == [2, 2]
    older = {**offline, "replicas": {**offline["replicas"], "B": {**offline["replicas"]["B"], "leader_epoch": 1}}}
    assert normalise(le, older)["replicas"]["B"]["leader_epoch"] == 1
    knows = {**offline, "replicas": {**offline["replicas"], "B": {**offline["replicas"]["B"], "leader_epoch": 2}}}
    with pytest.raises(InitialStateError, match=r"replicas\.B\.leader_epoch: 2 is the epoch of the controller"):
        normalise(le, knows)
    assert normalise(de, knows)["replicas"]["B"]["leader_epoch"] == 2


@pytest.mark.parametrize(
    "change, line, field, words",
    [
        ("      hw: 2", 14, "initial.replicas.A.hw", "4 is outside [log_start 0, LEO 3]"),
        ("  isr: [A]", 10, "initial.isr", "the leader A is not in the ISR [B]"),
        ("    B: {log: [a@0, b@2, x@4], hw: 0}", 15, "initial.replicas.B.epoch_cache", "does not match the log"),
        ("      log: [a@0, b@2, c@5]", 13, "initial.replicas.A.log[2]", "never decrease"),
        ("  leader_epoch: 5", 13, "initial.replicas.A.log", "above the epoch 3 the replica knows"),
        ("    B: {log: [a@0, b@2, x@4], hw: 0}", 15, "initial.replicas.B.leader_epoch", "no LeaderAndIsr is in flight"),
        ("    B: {log: [a@0, b@2, x@4], hw: 0}", 15, "initial.replicas.B.remote_leo", "only a replica that leads"),
        ("  isr: [A]", 15, "initial.replicas.B.log", "below the leader's HW 2"),
    ],
)
def test_an_impossible_state_names_file_line_and_field(
    tmp_path: Path, change: str, line: int, field: str, words: str
) -> None:
    replacement = {
        "      hw: 2": "      hw: 4",
        "  isr: [A]": "  isr: [B]" if "not in the ISR" in words else "  isr: [A, B]\n",
        "      log: [a@0, b@2, c@5]": "      log: [a@0, b@2, c@1]",
        "  leader_epoch: 5": "  leader_epoch: 3",
    }.get(change)
    if change.startswith("    B:"):
        replacement = {
            "does not match the log": "    B: {log: [a@0, b@2, x@4], hw: 0, epoch_cache: [[0, 0], [4, 2]]}",
            "no LeaderAndIsr is in flight": "    B: {log: [a@0, b@2, x@4], hw: 0, leader_epoch: 4}",
            "only a replica that leads": "    B: {log: [a@0, b@2, x@4], hw: 0, remote_leo: {A: 1}}",
        }[words]
    if "below the leader's HW" in words:
        text = FIXTURE.replace("  isr: [A]", "  isr: [A, B]").replace("{log: [a@0, b@2, x@4], hw: 0}", "{log: [a@0]}")
    else:
        assert replacement is not None
        text = FIXTURE.replace(change, replacement)
    [problem] = load(tmp_path, text)
    assert problem.startswith(f"{tmp_path / 'f.yaml'}:{line}: {field}: "), problem
    assert words in problem


def test_schema_errors_in_initial_point_at_the_field(tmp_path: Path) -> None:
    [problem] = load(tmp_path, FIXTURE.replace("      hw: 2", "      hw: two"))
    assert ":14: initial.replicas.A.hw: 'two' is not of type 'integer'" in problem
    [problem] = load(tmp_path, FIXTURE.replace("      hw: 2", "      hw: 2\n      lso: 1"))
    assert ":12: initial.replicas.A: unknown field ('lso' was unexpected)" in problem


def test_the_state_must_satisfy_the_invariants(tmp_path: Path) -> None:
    # B in the ISR with a record below the leader's HW that differs: StrongIsr (INIT-1)
    text = FIXTURE.replace("  isr: [A]", "  isr: [A, B]").replace("{log: [a@0, b@2, x@4], hw: 0}", "{log: [z@1, b@2]}")
    [problem] = load(tmp_path, text)
    assert "initial: not a state a partition can be in: StrongIsr" in problem


def test_two_replicas_never_hold_different_records_of_one_epoch_at_one_offset(tmp_path: Path) -> None:
    """INIT-6: one leader wrote each offset of an epoch once (found by the Kafka 4.4 replay,
    s20-85146: a drawn start whose two followers held different epoch-0 records at offset 1)."""
    [problem] = load(tmp_path, FIXTURE.replace("{log: [a@0, b@2, x@4], hw: 0}", "{log: [z@0, b@2]}"))
    assert "f.yaml:15: initial.replicas.B.log[0]: z@0 at offset 0, where A holds a@0 of the same epoch" in problem
    assert "(INIT-6)" in problem


def test_hw_truncation_keeps_no_cache() -> None:
    ht = config_from_dict({"replicas": ["A"], "generation": "hw-truncation"})
    with pytest.raises(InitialStateError, match="keeps no leader-epoch cache"):
        initial_state(ht, {"replicas": {"A": {"log": ["a@0"], "epoch_cache": [[0, 0]]}}})
    assert observe(initial_state(ht, {"replicas": {"A": {"log": ["a@0"]}}}))["replicas"]["A"]["epoch_cache"] == []


def test_log_start_is_observed_and_reads_below_it_are_out_of_range() -> None:
    state = initial_state(DE, {"isr": ["A"], "replicas": {"A": {"log_start": 3, "log": ["a@0", "b@0"], "hw": 5}}})
    a = observe(state)["replicas"]["A"]
    assert (a["log_start"], a["log"], a["leo"], a["epoch_cache"]) == (3, ["a@0", "b@0"], 5, [[0, 3]])
    below = observe(apply(state, step_from_dict({"kind": "consume", "offset": 2})))["consumer"]
    assert below == {"offset": 2, "records": [], "error": "OFFSET_OUT_OF_RANGE"}
    at = observe(apply(state, step_from_dict({"kind": "consume", "offset": 3})))["consumer"]
    assert at == {"offset": 3, "records": ["a@0", "b@0"], "error": None}


def test_answers_are_data_until_the_step_after_their_delivery() -> None:
    state = initial_state(DE, {"isr": ["A"], "replicas": {"A": {"log": ["a@0"], "hw": 1}}})
    assert observe(state)["answers"] == {"fetch": {"A": None, "B": None}, "epoch": {"A": None, "B": None}}
    state = apply(state, step_from_dict({"kind": "fetch", "replica": "B"}))
    answer = observe(state)["answers"]["fetch"]["B"]
    assert answer["status"] == "in_flight" and answer["records"] == ["a@0"] and answer["hw"] == 1
    assert answer["diverging_epoch"] is None and answer["log_start"] == 0
    state = apply(state, step_from_dict({"kind": "deliver_fetch", "replica": "B"}))
    assert observe(state)["answers"]["fetch"]["B"]["status"] == "delivered"
    state = apply(state, step_from_dict({"kind": "fetch", "replica": "B"}))  # nothing to read: parked
    parked = observe(state)["answers"]["fetch"]["B"]
    assert parked["status"] == "parked" and parked["deadline_ms"] == 500 and parked["hw"] is None
    state = apply(state, step_from_dict({"kind": "tick", "ms": 500}))
    assert observe(state)["answers"]["fetch"]["B"]["status"] == "in_flight"
    state = apply(state, step_from_dict({"kind": "crash", "replica": "B"}))
    assert observe(state)["answers"]["fetch"]["B"] is None  # crash discards the answer in flight


def test_an_answer_to_a_gone_session_is_observed_as_dropped() -> None:
    """MSG-DROP-1 at delivery: an answer addressed to an earlier incarnation is dropped on
    arrival, and shows as ``dropped`` for that one step."""
    from reference_impl.values import evolve

    le = config_from_dict({"replicas": ["A", "B"]})
    state = initial_state(le, {"isr": ["A"], "replicas": {"A": {"log": ["a@0"], "hw": 1}}})
    state = apply(state, step_from_dict({"kind": "fetch", "replica": "B"}))
    [response] = state.fetch_responses
    state = evolve(state, fetch_responses=(evolve(response, incarnation=response.incarnation - 1),))
    state = apply(state, step_from_dict({"kind": "deliver_fetch", "replica": "B"}))
    assert observe(state)["answers"]["fetch"]["B"]["status"] == "dropped"
    assert observe(state)["replicas"]["B"]["leo"] == 0
    state = apply(state, step_from_dict({"kind": "tick", "ms": 1}))
    assert observe(state)["answers"]["fetch"]["B"] is None  # observable for one step only


def test_truncation_below_the_log_start_moves_it() -> None:
    """LOG-START-2 directly: a replica truncated below its log start starts empty there."""
    from reference_impl.draft import Draft
    from reference_impl.replica_ops import truncate

    state = initial_state(DE, {"isr": ["A"], "replicas": {"B": {"log_start": 4, "log": ["a@0", "b@0"], "hw": 4}}})
    draft = Draft(state)
    truncate(draft, "B", 2, rule="TRUNC-EPOCH-2")
    b = observe(draft.freeze())["replicas"]["B"]
    assert (b["log_start"], b["log"], b["leo"], b["hw"], b["epoch_cache"]) == (2, [], 2, 2, [])
    assert "LOG-START-2" in draft.fired


def _no_initial_adapter() -> FunctionAdapter:
    def do(state, step):  # type: ignore[no-untyped-def]
        try:
            return apply(state, step_from_dict(step))
        except StepRejected as exc:
            raise StepRefused(exc.reason, exc.rule) from None

    return FunctionAdapter(
        Description("fresh-only", "1", ("leader-epoch", "diverging-epoch"), ("fetch_round",), ("replicas",), ("leo",)),
        init=lambda config: initial_state(config_from_dict(config)),
        apply=do,
        observe=observe,
    )


def test_without_the_capability_initial_fixtures_are_skipped_and_counted(tmp_path: Path) -> None:
    path = tmp_path / "f.yaml"
    path.write_text(FIXTURE, encoding="utf-8")
    fixtures = load_fixture_file(path)
    _, results = run_fixtures(_no_initial_adapter(), "fresh-only", fixtures)
    assert [r.outcome for r in results] == ["skipped"]
    assert results[0].reason.startswith("starts from a given state (initial:)")
    _, results = run_fixtures(ReferenceAdapter(), "reference", fixtures)
    assert [r.outcome for r in results] == ["passed"]


def test_function_and_sdk_adapters_start_from_a_given_state(tmp_path: Path) -> None:
    path = tmp_path / "f.yaml"
    path.write_text(FIXTURE, encoding="utf-8")
    fixtures = load_fixture_file(path)
    plain = _no_initial_adapter()
    given = FunctionAdapter(
        plain.describe(),
        init=lambda config: initial_state(config_from_dict(config)),
        apply=lambda state, step: apply(state, step_from_dict(step)),
        observe=observe,
        init_from=lambda config, initial: initial_state(config_from_dict(config), initial),
    )
    description, results = run_fixtures(given, "given", fixtures)
    assert description is not None and description.initial_state
    assert [r.outcome for r in results] == ["passed"]

    class Sdk(SdkAdapter):
        name, generations = "sdk", ("diverging-epoch",)
        steps, fields, replica_fields = ("fetch_round",), ("replicas",), ("leo", "log", "log_start")
        initial_state = True

        def reset(self, config: dict[str, object]) -> None:
            self.state = initial_state(config_from_dict(config))

        def reset_from(self, config: dict[str, object], initial: dict[str, object]) -> None:
            self.state = initial_state(config_from_dict(config), initial)

        def step(self, step: dict[str, object]) -> None:
            self.state = apply(self.state, step_from_dict(step))

        def observe(self) -> dict[str, object]:
            return observe(self.state)

    assert Sdk().implementation()["capabilities"]["initial_state"] is True
    _, results = run_fixtures(in_process(Sdk()), "sdk", fixtures)
    assert [r.outcome for r in results] == ["passed"]


def test_logs_match_fails_an_implementation_whose_logs_differ(tmp_path: Path) -> None:
    path = tmp_path / "f.yaml"
    produce = "  - do: {kind: produce, values: [d], acks: 1}\n    logs_match: [A, B]\n"
    path.write_text(FIXTURE + produce, encoding="utf-8")
    fixtures = load_fixture_file(path)
    _, results = run_fixtures(ReferenceAdapter(), "reference", fixtures)
    [result] = results
    assert result.outcome == "failed"
    assert "logs_match[A,B]: expected 'equal logs'" in result.reason
    assert "B: ['a@0', 'b@2', 'c@5']" in result.reason


def test_a_protocol_2_adapter_is_accepted_and_never_sent_initial(tmp_path: Path) -> None:
    """An older adapter (the example as it was: protocol 2, no initial_state) still runs."""
    script = tmp_path / "old_adapter.py"
    script.write_text(
        "import sys\n"
        f"sys.path.insert(0, {str(ROOT / 'examples')!r})\n"
        "from stdio_reference_adapter import Handler, serve\n"
        "class Old(Handler):\n"
        "    def cmd_hello(self, request):\n"
        "        reply = super().cmd_hello(request)\n"
        "        reply['protocol'] = 2\n"
        "        del reply['implementation']['capabilities']['initial_state']\n"
        "        return reply\n"
        "    def cmd_reset(self, request):\n"
        "        assert 'initial' not in request, 'initial sent to a protocol-2 adapter'\n"
        "        return super().cmd_reset(request)\n"
        "serve(Old())\n",
        encoding="utf-8",
    )
    adapter = StdioAdapter([sys.executable, str(script)])
    try:
        description, results = run_fixtures(adapter, "old", [f for f in bundled_fixtures() if f.group == "kafka"])
    finally:
        adapter.close()
    assert description is not None and not description.initial_state
    counts = Counter(r.outcome for r in results)
    assert counts["errored"] == 0 and counts["failed"] == 0
    assert counts["skipped"] >= 15 and counts["passed"] > 0


def test_the_stdio_example_starts_from_given_states() -> None:
    fixtures = [f for f in bundled_fixtures() if f.initial is not None]
    assert len({f.base_id for f in fixtures}) >= 15
    adapter = StdioAdapter(EXAMPLE)
    try:
        description, results = run_fixtures(adapter, "stdio", fixtures)
    finally:
        adapter.close()
    assert description is not None and description.initial_state
    assert Counter(r.outcome for r in results) == Counter({"passed": len(fixtures)})


def test_a_corpus_line_may_start_from_a_given_state() -> None:
    line = {
        "corpus": 1,
        "id": "given-1",
        "config": {"replicas": ["A", "B"], "generation": "diverging-epoch"},
        "initial": {"isr": ["A"], "replicas": {"A": {"log": ["a@0"], "hw": 1}}},
        "steps": [{"do": {"kind": "fetch_round", "replica": "B"}, "expect": {"replicas": {"B": {"leo": 1}}}}],
    }
    trace = parse_line(json.dumps(line), "c.jsonl", 3)
    assert trace.fixture.initial is not None and trace.fixture.initial["replicas"]["A"]["leo"] == 1
    _, results = run_fixtures(ReferenceAdapter(), "reference", [trace.fixture])
    assert [r.outcome for r in results] == ["passed"]
    line["initial"] = {"replicas": {"A": {"log": ["a@0"], "hw": 2}}}
    with pytest.raises(CorpusLineError, match=re.escape("c.jsonl:3: initial.replicas.A.hw: 2 is outside")):
        parse_line(json.dumps(line), "c.jsonl", 3)
