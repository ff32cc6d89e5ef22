"""Rule knockouts (conformance/search/knockout.py): built from the code for every rule, each a
real change of the reference, run through the zoo's seam, and judged by the fixtures.

The whole sweep (every knockout on every fixture, about a minute) runs only with
``KCONFORM_KNOCKOUT_FULL=1``; the rest are seconds.
"""

from __future__ import annotations

import ast
import os
import re
from pathlib import Path
from typing import Any

import pytest
from helpers import bundled_fixtures

import reference_impl
from conformance.judging.runner import reference_trace
from conformance.reports.knockout import matrix_html, terminal
from conformance.search import knockout
from conformance.search.knockout_sweep import sweep
from conformance.search.sensitivity import judge

HOME = Path(__file__).resolve().parents[1]
DOCS = (HOME / "docs" / "suite-strength.md").read_text(encoding="utf-8")


def by_id(fixtures: list, *ids: str) -> list:
    return [f for f in fixtures if f.id in ids]


def test_every_rule_has_a_knockout_or_a_reason() -> None:
    built = {k.rule for k in knockout.knockouts()}
    rules = set(knockout.spec_rules())
    assert len(rules) >= 100
    without = rules - built
    assert without == set(knockout.NO_KNOCKOUT), "update knockout.NO_KNOCKOUT (a rule gained or lost its sites)"
    for rule, reason in knockout.NO_KNOCKOUT.items():
        assert len(reason) > 40 and rule in DOCS


def test_knockout_ids_are_unique_and_each_changes_its_function() -> None:
    every = knockout.knockouts()
    assert len({k.id for k in every}) == len(every)
    for k in every:
        original = ast.dump(knockout._function(k.site))
        assert k.key != f"{k.site.module}:{original}", k.id
        assert k.operator in knockout.OPERATORS and k.id.startswith(f"{k.rule}:{k.operator}:")


def test_a_knockout_is_patched_where_its_function_is_looked_up() -> None:
    (k,) = [k for k in knockout.knockouts(["HW-LEADER-3"]) if k.operator == "guard-off"]
    adapter = knockout.member(k).build()
    owners = {getattr(owner, "__name__", "") for owner, _, _ in adapter.patches()}
    # maybe_increment_hw is defined in hw_advance and imported by name elsewhere
    assert {"reference_impl.hw_advance", "reference_impl.isr", "reference_impl.producer"} <= owners
    original = reference_impl.hw_advance.maybe_increment_hw
    with adapter.patched():
        assert reference_impl.isr.maybe_increment_hw is not original
    assert reference_impl.isr.maybe_increment_hw is original  # undone


def test_the_min_isr_gate_knockout_is_killed_by_its_fixture() -> None:
    fixtures = by_id(bundled_fixtures(), "hw-frozen-under-min-isr")
    traces = {f.id: reference_trace(f) for f in fixtures}
    (k,) = [k for k in knockout.knockouts(["HW-LEADER-3"]) if k.operator == "guard-off"]
    verdict = judge(knockout.member(k), fixtures, traces)
    assert [kill.fixture for kill in verdict.kills] == ["hw-frozen-under-min-isr"]


def test_the_hang_guard_counts_cpu_time_not_waiting() -> None:
    """A loaded machine (a process waiting for a core, or sleeping) gives the same verdict
    as an idle one: only CPU time the step itself uses counts (knockout.STEP_SECONDS)."""
    import time

    with knockout.deadline(0.05):
        time.sleep(0.2)  # waiting, not computing: no hang
    with pytest.raises(knockout.KnockoutHangs, match="CPU"), knockout.deadline(0.05):
        while True:  # a loop that never ends
            pass


def test_a_timer_knocked_out_stays_unfired_instead_of_looping() -> None:
    """FETCH-PARK-3's skip leaves the parked fetch parked past its deadline: TICK-1 fires a
    timer once, at its deadline, so the tick ends (it used to find the same fetch due for
    ever) and the fixture that waits for the empty answer kills it by a difference."""
    (k,) = [k for k in knockout.knockouts(["FETCH-PARK-3"]) if k.operator == "skip" and k.site.module == "clock"]
    fixtures = [f for f in bundled_fixtures() if f.base_id == "seed-02-purgatory"]
    traces = {f.id: reference_trace(f) for f in fixtures}
    verdict = judge(knockout.member(k), fixtures, traces)
    assert not verdict.errors and verdict.kills


def test_operators_keep_what_the_code_around_reads() -> None:
    """A skip keeps the assignments the kept ones read (PRODUCE-3's skip keeps the epoch
    the reported offsets carry) and the ``return`` ending a function that must return a
    value (TRUNC-EPOCH-2's offset: no skip built); a guard forced on keeps the ``is not
    None`` checks of what its branch reads (FETCH-LEADER-2 compares the follower's last
    epoch; FOLLOWER-DIVERGE-1 unpacks the diverging epoch: no guard-on built)."""
    ids = {k.id: k for k in knockout.knockouts()}
    assert "TRUNC-EPOCH-2:skip:truncation.offset_truncation:1" not in ids
    assert "FOLLOWER-DIVERGE-1:guard-on:follower.deliver_fetch:1" not in ids
    assert "TRUNC-EPOCH-1:skip:truncation.offset_truncation:1" in ids  # a return inside a branch is skipped
    assert "FETCH-LEADER-1:guard-on:leader_fetch.handle_fetch:1" in ids  # ``error`` only passed on

    def source(kid: str) -> str:
        k = ids[kid]
        mutated = knockout.mutate(k.site, k.operator)
        assert mutated is not None
        return ast.unparse(mutated[0])

    produce = source("PRODUCE-3:skip:producer.produce:1")
    assert "epoch = leader.leader_epoch" in produce and "log=leader.log.extend" not in produce
    assert "if last_fetched_epoch is not None:" in source("FETCH-LEADER-2:guard-on:leader_fetch.handle_fetch:1")
    assert "return True" in source("CTRL-ELECT-5:skip:controller._offline_election:1")


def test_a_case_the_knockout_errors_on_counts_as_a_kill_by_error() -> None:
    """LAI-PRE-1's skip delivers a LeaderAndIsr that is not there and raises: the case that
    expects the refusal errors, as a user's run would show it, and counts ("by error")."""
    fixtures = [f for f in bundled_fixtures() if f.base_id == "leader-and-isr-in-order"]
    result = sweep(fixtures, ["LAI-PRE-1"])
    (skip,) = [v for v in result.verdicts if v.knockout.operator == "skip"]
    assert skip.status == "killed" and skip.by_error and not skip.kills
    assert len(skip.errored) == len(fixtures) == skip.cases_in("hw-truncation") * 3
    assert result.to_dict()["killed_by_error"] >= 1
    text = terminal(result, lambda rows, headers: "\n".join(" | ".join(map(str, r)) for r in rows))
    assert "by error" in text and f"{len(fixtures)} cases ({len(fixtures)} by error)" in text


def test_equivalent_knockouts_exist_and_are_argued_in_the_docs() -> None:
    ids = {k.id for k in knockout.knockouts()}
    for kid, argument in knockout.EQUIVALENT.items():
        assert kid in ids, f"{kid}: no such knockout any more"
        assert f"`{kid}`" in DOCS, f"{kid}: argue it in docs/suite-strength.md"
        assert len(argument) > 40


def test_per_generation_equivalences_exist_are_argued_and_are_not_counted_there() -> None:
    """knockout.EQUIVALENT_IN: a knockout that no case of one generation can kill is not
    counted weak there (its other generations still are), and the sweep says why."""
    ids = {k.id for k in knockout.knockouts()}
    generations = {g.value for g in reference_impl.Generation}
    assert knockout.EQUIVALENT_IN
    for kid, by_generation in knockout.EQUIVALENT_IN.items():
        assert kid in ids, f"{kid}: no such knockout any more"
        assert kid not in knockout.EQUIVALENT, f"{kid}: equivalent everywhere, not per generation"
        assert f"`{kid}`" in DOCS, f"{kid}: argue it in docs/suite-strength.md"
        assert by_generation and set(by_generation) < generations  # some generation can still kill it
        assert all(len(argument) > 40 for argument in by_generation.values())
    fixtures = [f for f in bundled_fixtures() if f.base_id == "restart-drops-epoch-led-without-writing"]
    result = sweep(fixtures, ["TRUNC-2"])
    (verdict,) = [v for v in result.verdicts if v.knockout.id == "TRUNC-2:guard-on:replica_ops.truncate:1"]
    assert "hw-truncation" not in verdict.reached and verdict.reached  # killed in the others
    assert verdict.to_dict()["equivalent_in"] == knockout.EQUIVALENT_IN[verdict.knockout.id]
    text = terminal(result, lambda rows, headers: "")
    assert "TRUNC-2:guard-on:replica_ops.truncate:1 [H]" in text


ARGUED_ON_RANDOM_RUNS = [
    # (generation, what always holds there): the arguments of knockout.EQUIVALENT_IN
    ("hw-truncation", "no epoch cache", lambda state: all(r.epoch_cache == () for r in state.replicas)),
    ("hw-truncation", "no epoch answer in flight", lambda state: not state.epoch_responses),
    ("diverging-epoch", "no epoch answer in flight", lambda state: not state.epoch_responses),
    ("hw-truncation", "no ISR proposal in flight", lambda state: not state.alter_partitions),
    ("leader-epoch", "no ISR proposal in flight", lambda state: not state.alter_partitions),
]


@pytest.mark.parametrize(("generation", "holds", "check"), ARGUED_ON_RANDOM_RUNS, ids=lambda v: str(v)[:24])
def test_per_generation_equivalence_arguments_hold_on_random_runs(generation: str, holds: str, check: Any) -> None:
    """The arguments of knockout.EQUIVALENT_IN: under hw-truncation every epoch cache stays
    empty (TRUNC-2/EPOCH-CACHE-2's guard-on); outside leader-epoch no epoch answer is ever in
    flight (EPOCH-DELIVER-PRE-1's), outside diverging-epoch no ISR proposal
    (ISR-ALTER-PRE-1's); from drawn starts too."""
    import random

    from conformance.search.distribution import RandomChooser, draw_config, draw_initial, draw_steps
    from reference_impl import Generation, StepRejected, apply, initial_state
    from reference_impl.given import given_state

    for seed in range(120):
        chooser = RandomChooser(random.Random(seed))
        config = draw_config(chooser, Generation(generation))
        initial = draw_initial(chooser, config, 2)
        state = given_state(config, initial) if initial is not None else initial_state(config)
        assert check(state), (seed, holds)
        for _ in range(30):
            steps = draw_steps(chooser, state, refused=False)
            if not steps:
                break
            for step in steps:
                try:
                    state = apply(state, step)
                except StepRejected:
                    continue
                assert check(state), (seed, step, holds)


def test_sweep_smoke_lists_the_rules_asked_and_renders() -> None:
    fixtures = [
        f for f in bundled_fixtures() if f.base_id in ("hw-frozen-under-min-isr", "seed-11-consumer-visibility")
    ]
    result = sweep(fixtures, ["HW-LEADER-3", "CONSUME-1", "LOG-START-1"])
    assert [r.rule for r in result.rules] == ["HW-LEADER-3", "CONSUME-1", "LOG-START-1"]
    assert result.rules[0].status == "killed"
    assert result.rules[2].status == "no knockout"
    text = terminal(result, lambda rows, headers: "\n".join(" | ".join(map(str, r)) for r in rows))
    assert re.search(r"knockouts: \d+/\d+ killed by", text)
    page = matrix_html(result)
    assert "hw-frozen-under-min-isr" in page and "<table>" in page
    assert result.to_dict()["rules"] == 3


@pytest.mark.skipif(not os.environ.get("KCONFORM_KNOCKOUT_FULL"), reason="the whole sweep: KCONFORM_KNOCKOUT_FULL=1")
def test_every_non_equivalent_knockout_is_killed_by_the_bundled_fixtures() -> None:
    result = sweep(bundled_fixtures())
    survivors = [v.knockout.id for v in result.verdicts if v.status == "survived"]
    assert not survivors, survivors


def test_the_states_some_equivalences_rule_out_do_not_occur_on_random_runs() -> None:
    """knockout.EQUIVALENT argues that some guards are never taken: an answer in flight
    that its session would not accept, a LeaderAndIsr in flight to an offline broker, a
    follower whose cache has no epoch at or below the leader's answer (TRUNC-EPOCH-4).
    Random runs of the fuzzer's distribution, in every generation, never reach one."""
    import random

    from conformance.search.distribution import RandomChooser, draw_config, draw_steps
    from reference_impl import Generation, StepRejected, apply, initial_state
    from reference_impl.draft import Draft
    from reference_impl.network import reachable

    for seed in range(240):
        chooser = RandomChooser(random.Random(seed))
        state = initial_state(draw_config(chooser, list(Generation)[seed % 3]))
        for _ in range(30):
            steps = draw_steps(chooser, state, refused=False)
            if not steps:
                break
            for step in steps:
                d = Draft(state)
                for answer in (*state.fetch_responses, *state.epoch_responses):
                    assert reachable(d, answer.dst, answer.incarnation, answer.src, answer.request_epoch), (seed, step)
                assert all(state.replica(m.dst).online for m in state.leader_and_isr), (seed, step)
                try:
                    state = apply(state, step)
                except StepRejected:
                    continue
                assert "TRUNC-EPOCH-4" not in state.fired, (seed, step)


def test_the_knockout_command_prints_json_writes_the_matrix_and_checks_rule_ids(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import json

    from conformance.cli.main import main

    fixture = str(HOME / "fixtures" / "kafka" / "hw-frozen-under-min-isr.yaml")
    page = tmp_path / "m.html"
    args = ["sensitivity", "--knockout", "--rule", "HW-LEADER-3", "--fixtures", fixture, "--no-progress"]
    assert main([*args, "--format", "json", "--html", str(page)]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["rules"] == 1 and out["survived"] == 0 and out["killed"] == out["knockouts"] >= 2
    assert "Rule x fixture matrix" in page.read_text(encoding="utf-8")
    assert main(["sensitivity", "--knockout", "--rule", "HW-LEADER-99", "--no-progress"]) == 2
    assert "no rule HW-LEADER-99" in capsys.readouterr().err
