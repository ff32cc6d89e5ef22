"""``kconform sensitivity --like``: the zoo judged with a smaller implementation's shape.

An implementation with whole fetch rounds only, reporting only its logs and LEOs (the
JavaScript example's shape), sees a replication bug only through the records it appends;
the fixtures written for that (an acks=all produce the lag check, the HW or a rejoin
decides) must kill the ISR and HW members it can show. The reference with the same shape is
the control: where it fails, every member would, so the command refuses that level.
"""

from __future__ import annotations

import json

import pytest
from helpers import LOGS_ONLY, bundled_fixtures

from conformance.cli.main import main
from conformance.search.sensitivity import sensitivity
from conformance.zoo import get
from conformance.zoo.shaped import CONTROL, Shaped, shaped

SHOWN_THROUGH_APPENDS = (
    "hw-without-max",
    "hw-counts-every-replica",
    "hw-ignores-caught-up-followers",
    "hw-not-advanced-on-isr-shrink",
    "caught-up-previous-fetch-off-by-one",
    "caught-up-previous-fetch-stamped-now",
    "caught-up-only-at-log-end-under-epochs",
    "isr-shrink-ignores-leo-equality",
    "isr-shrink-at-exactly-lag",
    "isr-join-without-hw-check",
    "isr-join-above-hw-only",
    "new-leader-starts-follower-leos-at-zero",
    "acks-all-ignores-min-insync",
)
"""Members that fuzz with the logs-only shape kills (``--level settled --fuzz-budget
100``) and that no fixture did before the fixtures of the lag check, the HW and the rejoin
seen through acks=all (2026-12-03): the 369 cases before them leave all thirteen alive in
this shape at ``settled``."""


def test_a_shaped_member_reports_only_the_shape_and_receives_answers_by_itself() -> None:
    adapter = Shaped(CONTROL.build(), LOGS_ONLY)
    description = adapter.describe()
    assert description.steps == LOGS_ONLY.steps and description.replica_fields == ("leo", "log")
    assert not description.initial_state
    adapter.reset({"replicas": ["A", "B"], "generation": "leader-epoch"})
    parked = adapter.step({"kind": "fetch_round", "replica": "B"})
    assert parked.observation == {
        "clock_ms": 0,
        "replicas": {"A": {"leo": 0, "log": []}, "B": {"leo": 0, "log": []}},
    }
    answered = adapter.step({"kind": "produce", "values": ["m0"], "acks": "1", "id": "p1"})
    # the append completes B's parked fetch, and B receives the answer at once
    assert answered.observation is not None
    assert answered.observation["replicas"]["B"] == {"leo": 1, "log": ["m0@0"]}
    adapter.close()


def test_the_fixtures_kill_the_members_a_logs_only_shape_shows() -> None:
    members = [shaped(get(name), LOGS_ONLY) for name in SHOWN_THROUGH_APPENDS]
    result = sensitivity([shaped(CONTROL, LOGS_ONLY), *members], bundled_fixtures(), level="settled")
    control, *verdicts = result.verdicts
    assert not control.killed, control.kills[:3]
    assert [v.member.name for v in verdicts if not v.killed] == []


def test_the_command_refuses_a_level_the_shape_itself_fails(capsys: pytest.CaptureFixture[str]) -> None:
    """shape-round-only receives answers as soon as they exist: exact sees that timing in
    three fixtures, so at exact every member would be 'killed' by it."""
    code = main(["sensitivity", "--like", "shape-round-only", "--zoo", "acks-all-ignores-min-insync", "--no-progress"])
    err = capsys.readouterr().err
    assert code == 2 and "the reference itself, with that shape, fails at level exact" in err, err
    assert "--level settled" in err
    code = main(["sensitivity", "--like", "shape-round-only", "--zoo", "acks-all-ignores-min-insync",
                 "--level", "settled", "--no-progress"])  # fmt: skip
    out = capsys.readouterr().out
    assert code == 0, out
    assert "every member judged with the shape of shape-round-only" in out
    assert "kill rate: 1/1 members" in out
    main(["sensitivity", "--like", "shape-round-only", "--zoo", "acks-all-ignores-min-insync", "--level", "settled",
          "--format", "json"])  # fmt: skip
    doc = json.loads(capsys.readouterr().out)  # the shape is in the document, not printed before it
    assert doc["like"]["implementation"] == "shape-round-only" and "deliver_fetch" not in doc["like"]["steps"]
