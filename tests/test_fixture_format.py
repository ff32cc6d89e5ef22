"""The fixture format: ``format:`` versions (a newer one refused, format 1 migrated, an
unversioned fixture that may be format 1 asked about), steps that vary by generation
(``only``, ``expect_under``), and the issue-20 step forms (``heartbeat_lapse``,
``epoch_query`` for epoch -1)."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import bundled_fixtures

from conformance.adapters.in_process import ReferenceAdapter
from conformance.fixtures.format import CURRENT_FORMAT
from conformance.fixtures.loading import FixtureError, load_fixture_file
from conformance.judging.runner import run_fixture
from reference_impl import Config, Generation, StepFormatError, StepRejected, apply, initial_state, step_from_dict

# B never fetches: at the ISR check of 1500 it has been behind for more than 1000 ms.
SHRINK = """\
id: shrink
title: B is dropped from the ISR
source: test
config: {generation: diverging-epoch, replicas: [A, B], replica_lag_time_max_ms: 1000}
steps:
  - do: {kind: produce, values: [m0], acks: 1}
  - do: {kind: tick, ms: 1500}
    expect:
      isr: [A]
      replicas: {A: {hw: 1}}
  - do: {kind: produce, values: [m1], acks: 1}
    expect:
      replicas: {A: {hw: 2}}
"""


def write(tmp_path: Path, text: str, name: str = "f.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def problems(tmp_path: Path, text: str) -> list[str]:
    with pytest.raises(FixtureError) as info:
        load_fixture_file(write(tmp_path, text))
    return [str(p) for p in info.value.problems]


def passes(fixture: object) -> str:
    adapter = ReferenceAdapter()
    result = run_fixture(adapter, adapter.describe(), fixture, "reference")  # type: ignore[arg-type]
    return str(result.outcome)


def test_a_newer_format_is_refused_with_file_line_and_field(tmp_path: Path) -> None:
    text = f"id: x\nformat: {CURRENT_FORMAT + 1}\nsteps: {{unknown: 1}}\n"
    [problem] = problems(tmp_path, text)
    assert problem.startswith(f"{tmp_path / 'f.yaml'}:2: format: format {CURRENT_FORMAT + 1} is newer")
    assert "upgrade kconform" in problem


def test_format_below_one_is_a_schema_problem(tmp_path: Path) -> None:
    [problem] = problems(tmp_path, "format: 0\n" + SHRINK)
    assert ":1: format: 0 is less than the minimum of 1" in problem


def test_an_unversioned_fixture_that_may_be_format_1_is_asked_about(tmp_path: Path) -> None:
    [problem] = problems(tmp_path, SHRINK)
    assert ": format: under diverging-epoch the leader proposes an ISR change at step 2 (line 7, tick)" in problem
    assert "format: 1" in problem and "format: 2" in problem


def test_format_2_keeps_the_proposal_in_flight(tmp_path: Path) -> None:
    text = "format: 2\n" + SHRINK.replace("      isr: [A]\n      replicas: {A: {hw: 1}}", "      isr: [A, B]")
    text = text.replace("      replicas: {A: {hw: 2}}", "      replicas: {A: {hw: 0}}")
    [fixture] = load_fixture_file(write(tmp_path, text))
    assert [fs.step.kind for fs in fixture.steps] == ["produce", "tick", "produce"]
    assert passes(fixture) == "passed"


def test_format_1_is_migrated_the_expectations_move_after_the_delivery(tmp_path: Path) -> None:
    [fixture] = load_fixture_file(write(tmp_path, "format: 1\n" + SHRINK))
    kinds = [fs.step.kind for fs in fixture.steps]
    assert kinds == ["produce", "tick", "deliver_alter_partition", "produce"]
    tick, deliver = fixture.steps[1], fixture.steps[2]
    assert tick.expect is None and deliver.expect == {"isr": ["A"], "replicas": {"A": {"hw": 1}}}
    assert deliver.line == tick.line == 8 and deliver.do == {"kind": "deliver_alter_partition", "replica": "A"}
    assert [fs.index for fs in fixture.steps] == [0, 1, 2, 3]
    assert "format 1 to 2 migration" in (deliver.why or "")
    assert passes(fixture) == "passed"


def test_format_1_cuts_a_tick_at_each_proposing_isr_check(tmp_path: Path) -> None:
    # C never fetches and is out of sync at the check of 1500; B caught up at 600, is behind
    # after m1 and out of sync at 2000. Format 1 committed each change at its check; the
    # migration cuts the tick there and delivers each proposal.
    text = """\
format: 1
id: two
title: two shrinks in one tick
source: test
config: {generation: diverging-epoch, replicas: [A, B, C], replica_lag_time_max_ms: 1000}
steps:
  - do: {kind: produce, values: [m0], acks: 1}
  - do: {kind: tick, ms: 600}
  - do: {kind: fetch_round, replica: B}
  - do: {kind: fetch_round, replica: B}
  - do: {kind: produce, values: [m1], acks: 1}
  - do: {kind: tick, ms: 1900}
    expect:
      isr: [A]
      partition_epoch: 2
"""
    [fixture] = load_fixture_file(write(tmp_path, text))
    migrated = [(fs.step.kind, getattr(fs.step, "ms", None)) for fs in fixture.steps[5:]]
    assert migrated == [
        ("tick", 900),
        ("deliver_alter_partition", None),
        ("tick", 500),
        ("deliver_alter_partition", None),
        ("tick", 500),
    ]
    assert fixture.steps[-1].expect == {"isr": ["A"], "partition_epoch": 2}
    assert passes(fixture) == "passed"


def test_format_1_refuses_where_a_checkpoint_shares_the_millisecond(tmp_path: Path) -> None:
    text = "format: 1\n" + SHRINK.replace(
        "replica_lag_time_max_ms: 1000}",
        "replica_lag_time_max_ms: 1000, replica_high_watermark_checkpoint_interval_ms: 1500}",
    )
    [problem] = problems(tmp_path, text)
    assert ":8: format: format 1: at 1500 ms A's ISR check and its HW checkpoint ran in the same millisecond" in problem


def test_bundled_fixtures_read_as_the_current_format() -> None:
    """Two bundled fixtures leave a proposal in flight on purpose, without a given state,
    and say format: 2; the others need no format line."""
    stated = [f for f in bundled_fixtures() if "format: 2" in Path(f.path).read_text(encoding="utf-8")]
    assert {Path(f.path).name for f in stated} == {
        "05b-data-loss-diverging-epoch.yaml",
        "isr-caught-up-as-of-previous-fetch-alter-partition.yaml",
    }


VARYING = """\
id: varying
title: steps by generation
source: test
generations: [leader-epoch, diverging-epoch]
config: {replicas: [A, B], replica_lag_time_max_ms: 1000}
steps:
  - do: {kind: produce, values: [m0], acks: 1}
  - do: {kind: tick, ms: 1500}
    expect:
      leader_epoch: 0
    expect_under:
      leader-epoch: {isr: [A], partition_epoch: 1}
      diverging-epoch: {isr: [A, B], replicas: {A: {hw: 0}}}
  - do: {kind: deliver_alter_partition, replica: A}
    only: [diverging-epoch]
    expect: {isr: [A], partition_epoch: 1}
  - do: {kind: produce, values: [m1], acks: 1}
    expect:
      replicas: {A: {hw: 2}}
"""


def test_only_and_expect_under_lower_to_one_plain_case_per_generation(tmp_path: Path) -> None:
    le, de = load_fixture_file(write(tmp_path, VARYING))
    assert (le.id, de.id) == ("varying/leader-epoch", "varying/diverging-epoch")
    assert [fs.step.kind for fs in le.steps] == ["produce", "tick", "produce"]
    assert [fs.step.kind for fs in de.steps] == ["produce", "tick", "deliver_alter_partition", "produce"]
    assert le.steps[1].expect == {"leader_epoch": 0, "isr": ["A"], "partition_epoch": 1}
    assert de.steps[1].expect == {"leader_epoch": 0, "isr": ["A", "B"], "replicas": {"A": {"hw": 0}}}
    assert [fs.index for fs in le.steps] == [0, 1, 2] and le.steps[2].line == de.steps[3].line == 17
    assert passes(le) == passes(de) == "passed"


def test_expect_under_merges_replica_fields_key_by_key(tmp_path: Path) -> None:
    text = VARYING.replace("      leader_epoch: 0\n", "      replicas: {A: {leo: 1}}\n")
    _, de = load_fixture_file(write(tmp_path, text))
    assert de.steps[1].expect == {"replicas": {"A": {"leo": 1, "hw": 0}}, "isr": ["A", "B"]}


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        (
            ("    only: [diverging-epoch]", "    only: [hw-truncation]"),
            ":15: steps[2].only[0]: hw-truncation is not run (this fixture runs under leader-epoch, diverging-epoch)",
        ),
        (
            ("      leader-epoch: {isr: [A], partition_epoch: 1}", "      leader-epoch: {isr: [A], leader_epoch: 1}"),
            ":12: steps[1].expect_under.leader-epoch.leader_epoch: also stated in expect",
        ),
        (
            (
                "    only: [diverging-epoch]\n",
                "    only: [diverging-epoch]\n    expect_under: {leader-epoch: {isr: [A]}}\n",
            ),
            ":16: steps[2].expect_under.leader-epoch: the step does not run under leader-epoch (only: diverging-epoch)",
        ),
        (
            ("diverging-epoch: {isr: [A, B],", "diverging-epoch: {isr: [A, Z],"),
            ":13: steps[1].expect_under.diverging-epoch.isr[1]: unknown replica 'Z'",
        ),
        (
            ("      leader-epoch: {isr", "      leader-epoc: {isr"),
            ":11: steps[1].expect_under: 'leader-epoc' is not one of",
        ),
    ],
)
def test_generation_forms_report_file_line_and_field(tmp_path: Path, change: tuple[str, str], expected: str) -> None:
    old, new = change
    assert old in VARYING
    found = problems(tmp_path, VARYING.replace(old, new))
    assert any(expected in p for p in found), found


def test_a_generation_with_no_step_is_an_error(tmp_path: Path) -> None:
    text = VARYING.replace(
        "  - do: {kind: produce, values: [m0], acks: 1}\n",
        "  - do: {kind: produce, values: [m0], acks: 1}\n    only: [diverging-epoch]\n",
    )
    text = text.replace(
        "  - do: {kind: tick, ms: 1500}\n", "  - do: {kind: tick, ms: 1500}\n    only: [diverging-epoch]\n"
    )
    text = text.replace(
        "  - do: {kind: produce, values: [m1], acks: 1}\n",
        "  - do: {kind: produce, values: [m1], acks: 1}\n    only: [diverging-epoch]\n",
    )
    text = text.replace("      leader-epoch: {isr: [A], partition_epoch: 1}\n", "")
    found = problems(tmp_path, text)
    assert any(": steps: no step runs under leader-epoch" in p for p in found), found


def test_epoch_query_takes_the_undefined_epoch() -> None:
    step = step_from_dict({"kind": "epoch_query", "replica": "A", "epoch": -1, "current_leader_epoch": -1})
    state = apply(initial_state(Config(replicas=("A", "B"), generation=Generation.DIVERGING_EPOCH)), step)
    assert state.epoch_query is not None and (state.epoch_query.epoch, state.epoch_query.end_offset) == (-1, -1)
    assert state.epoch_query.error is None and "EPOCH-QUERY-3" in state.fired
    with pytest.raises(StepFormatError, match="must be an integer >= -1"):
        step_from_dict({"kind": "epoch_query", "replica": "A", "epoch": -2})


def test_heartbeat_lapse_is_kraft_only_and_of_a_live_follower() -> None:
    lapse = step_from_dict({"kind": "heartbeat_lapse", "replica": "B"})
    for gen in (Generation.LEADER_EPOCH, Generation.HW_TRUNCATION):
        with pytest.raises(StepRejected) as refused:
            apply(initial_state(Config(replicas=("A", "B"), generation=gen)), lapse)
        assert refused.value.rule == "CTRL-FENCE-PRE-1" and "ZooKeeper" in refused.value.reason
    kraft = initial_state(Config(replicas=("A", "B", "C"), generation=Generation.DIVERGING_EPOCH))
    crashed = apply(kraft, step_from_dict({"kind": "crash", "replica": "B"}))
    with pytest.raises(StepRejected, match="offline"):
        apply(crashed, lapse)
    after = apply(kraft, lapse)
    assert (after.controller.isr, after.controller.epoch, after.controller.partition_epoch) == (("A", "C"), 0, 1)
    assert after.leader_and_isr == () and after.controller.down == ()  # unfenced again
    again = apply(after, lapse)  # outside the ISR: only its registration changes
    assert again.controller == after.controller and "CTRL-FENCE-1" in again.fired


def test_heartbeat_lapse_of_the_last_isr_member_keeps_it() -> None:
    """KRaft writes no empty ISR (CTRL-FAIL-2): an offline partition keeps its last member."""
    state = initial_state(Config(replicas=("A", "B"), generation=Generation.DIVERGING_EPOCH))
    for do in (
        {"kind": "crash", "replica": "B"},
        {"kind": "elect"},
        {"kind": "crash", "replica": "A"},
        {"kind": "elect"},
        {"kind": "restart", "replica": "A"},
    ):
        state = apply(state, step_from_dict(do))
    assert state.controller.leader is None and state.controller.isr == ("A",)
    after = apply(state, step_from_dict({"kind": "heartbeat_lapse", "replica": "A"}))
    assert after.controller == state.controller and {"CTRL-FENCE-1", "CTRL-FAIL-2"} <= set(after.fired)


def test_a_proposal_in_flight_when_the_follower_is_fenced_is_refused() -> None:
    """The partition change moves the partition epoch: the leader's AlterPartition carries
    the older one and gets INVALID_UPDATE_VERSION (ISR-ALTER-4)."""
    config = Config(replicas=("A", "B", "C"), generation=Generation.DIVERGING_EPOCH, replica_lag_time_max_ms=1000)
    state = initial_state(config)
    steps = (
        {"kind": "produce", "values": ["m0"], "acks": 1},
        {"kind": "fetch_round", "replica": "C", "max_wait_ms": 0},
        {"kind": "fetch_round", "replica": "C", "max_wait_ms": 0},
        {"kind": "tick", "ms": 1500},  # B never fetched: A proposes ISR [A, C]
        {"kind": "heartbeat_lapse", "replica": "C"},
        {"kind": "deliver_alter_partition", "replica": "A"},
    )
    for do in steps:
        state = apply(state, step_from_dict(do))
    assert "ISR-ALTER-4" in state.fired and state.controller.isr == ("A", "B")


def test_a_fixture_from_a_given_state_is_at_least_format_2(tmp_path: Path) -> None:
    """``initial:`` arrived with ``deliver_alter_partition``: no question asked."""
    text = SHRINK.replace("steps:\n", "initial: {leader: A}\nsteps:\n").replace(
        "      isr: [A]\n      replicas: {A: {hw: 1}}", "      isr: [A, B]"
    )
    text = text.replace("      replicas: {A: {hw: 2}}", "      replicas: {A: {hw: 0}}")
    [fixture] = load_fixture_file(write(tmp_path, text))
    assert [fs.step.kind for fs in fixture.steps] == ["produce", "tick", "produce"]
