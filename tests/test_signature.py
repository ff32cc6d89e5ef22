"""Failure signatures (``conformance/judging/signature.py``): a class of failures, its particulars left out."""

from __future__ import annotations

import re
from typing import Any

from conformance.judging.signature import MAX_TEXT, blank, failure_signature, field_kind
from conformance.reports import views


def test_ids_in_field_paths_are_wildcarded_and_names_kept() -> None:
    assert field_kind("replicas.B.remote_leo.C") == "replicas.*.remote_leo.*"
    assert field_kind("replicas.A.log") == "replicas.*.log"
    assert field_kind("producer.p7") == "producer.*"
    assert field_kind("answers.fetch.B.records") == "answers.fetch.*.records"
    assert field_kind("in_flight.fetch_responses") == "in_flight.fetch_responses"
    assert field_kind("isr") == "isr"


def test_messages_lose_numbers_and_replica_ids_but_not_rule_ids() -> None:
    text = "rejected [FETCH-LEADER-3]: max_records 1 ends inside a batch of 3 records at offset 13 of B"
    assert blank(text, ["B", "C"]) == (
        "rejected [FETCH-LEADER-3]: max_records N ends inside a batch of N records at offset N of *"
    )
    assert blank("A epoch 1 -> -1", ["A"]) == "* epoch N -> N"
    assert blank("BB is not B", ["B"]) == "BB is not *", "whole names only"
    assert len(blank("x" * 500)) == MAX_TEXT


def _result(outcome: str = "failed", **first: Any) -> dict[str, Any]:
    return {"outcome": outcome, "fixture": "t", "implementation": "i", "divergence": first or None, "reason": "boom 7"}


def test_a_failure_is_named_by_its_first_difference() -> None:
    assert failure_signature(_result(kind="fetch_round", field="replicas.C.leo")) == "fetch_round: replicas.*.leo"
    higher = _result(kind="fetch", field="replicas.C.leo", expected=1, actual=3)
    assert failure_signature(higher) == "fetch: replicas.*.leo higher"
    shorter = _result(kind="tick", field="isr", expected=["A", "B"], actual=["A"])
    assert failure_signature(shorter) == "tick: isr shorter"
    assert failure_signature(_result(kind="tick", field="isr", expected=["A"], actual=["B"])) == "tick: isr same length"
    assert failure_signature(_result(kind="crash", field="replicas.A.online", expected=True, actual=False)) == (
        "crash: replicas.*.online"
    )
    refused = _result(kind="fetch", field="(step)", expected="accepted", actual="rejected [X-1]: B has 2")
    assert failure_signature(refused, ["B"]) == "fetch: expected accepted, rejected [X-1]: * has N"
    assert failure_signature(_result(kind="produce", property="SAFE-ACKED")) == "produce: safety SAFE-ACKED"
    assert failure_signature(_result("errored")) == "error: boom N"
    assert failure_signature(_result()) == "failed: boom N"


def test_a_fixture_run_report_groups_its_failures_too() -> None:
    doc = {
        "fixtures": [{"id": f, "config": {"replicas": ["A", "B"]}} for f in ("f1", "f2", "f3")],
        "results": [
            {**_result(kind="tick", field="replicas.A.hw"), "fixture": "f1"},
            {**_result(kind="tick", field="replicas.B.hw"), "fixture": "f2"},
            {**_result(kind="elect", field="leader"), "fixture": "f3"},
            {"outcome": "passed", "fixture": "f3", "implementation": "i"},
        ],
    }
    table = views.signatures(doc)
    assert table.rows == [["i", "2", "tick: replicas.*.hw", "f1, f2"], ["i", "1", "elect: leader", "f3"]]


def test_a_run_summary_counts_skips_by_reason_not_by_step_number() -> None:
    reasons = [
        "step 3 (fetch_round) uses max_wait_ms, which the implementation does not honour",
        "step 5 (fetch_round) uses max_wait_ms, which the implementation does not honour",
        "nothing left to run: step 1 (crash) is not supported and cannot be lowered: the run ends before it",
        "none of its 4 expectations survive lowering (step 3 (crash) is not supported and cannot be lowered: "
        "the run ends before it)",
        "none of its 1 expectation survive lowering (step 2 (elect) is not supported and cannot be lowered: "
        "the run ends before it)",
        "starts from a given state (initial:), which the implementation cannot (capability initial_state)",
    ]
    doc = {
        "fixtures": [{"id": f"f{n}", "group": "g"} for n in range(len(reasons))],
        "implementations": [{"id": "i", "name": "i"}],
        "results": [
            {"implementation": "i", "fixture": f"f{n}", "outcome": "skipped", "status": "SKIP", "reason": reason}
            for n, reason in enumerate(reasons)
        ],
        "run": {"duration_s": 0.1},
    }
    note = views.summary(doc).note
    skipped = note.split("; skipped: ")[1]
    assert skipped.startswith(
        "2 uses max_wait_ms (in fetch_round), which the implementation does not honour, "
        "2 ends at a step it does not support (crash) before anything is checked, "
    ), skipped
    assert "1 ends at a step it does not support (elect) before anything is checked" in skipped
    assert "1 starts from a given state (initial:)" in skipped
    doc["implementations"].append({"id": "j", "name": "j"})
    doc["results"].append({**doc["results"][0], "implementation": "j"})
    skipped = views.summary(doc).note.split("; skipped: ")[1]
    assert skipped.startswith("2 i: uses max_wait_ms (in fetch_round)"), skipped  # several: each says whose
    assert "1 j: uses max_wait_ms (in fetch_round)" in skipped


def test_the_runners_own_skip_reasons_are_grouped() -> None:
    """The reasons the runner writes (not copies of them) lose their step numbers: a
    change to their wording that the patterns miss shows here as a reason still naming
    its step."""
    from helpers import LOGS_ONLY, bundled_fixtures

    from conformance.judging.runner import run_fixtures
    from conformance.judging.signature import skip_signature
    from conformance.zoo.shaped import CONTROL, Shaped

    _, results = run_fixtures(Shaped(CONTROL.build(), LOGS_ONLY), "logs-only", bundled_fixtures())
    reasons = {r.reason for r in results if r.outcome == "skipped"}
    kinds = {skip_signature(reason) for reason in reasons}
    assert len(reasons) > 20 and len(kinds) < len(reasons) / 2, kinds
    assert not [k for k in kinds if re.search(r"\bstep N \(", k)], kinds
    assert "uses max_wait_ms (in fetch_round), which the implementation does not honour" in kinds
    assert "ends at a step it does not support (crash) before anything is checked" in kinds
