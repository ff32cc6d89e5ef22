"""Rule knockouts: for every numbered rule, mutants of the reference that disable it.

The zoo (``conformance/zoo``) is hand-written, so it measures a suite against the faults
its authors thought of. A knockout is built from the code instead: rule ids sit on the
lines that implement them (``d.fired.append("PRODUCE-3")``, ``raise StepRejected("FETCH-PRE-1",
...)``, a ``# HW-LEADER-3: ...`` comment above a block), so for each such *site* the
function holding it is parsed, changed by one operator and compiled again:

- ``skip``: the statements the site marks are left out (a comment marks the paragraph below
  it; a ``d.fired`` line marks its own paragraph; any other statement marks itself).
  Assignments to names read further down are kept, so a knockout skips an effect instead
  of crashing on a missing name;
- ``guard-off``: the ``if`` around the site never takes the site's branch;
- ``guard-on``: the ``if`` around the site always takes it.

A mutant that would only change the ``fired`` bookkeeping is not built. Mutants that come
out identical (two rules on one paragraph) are run once. The changed function replaces
the original wherever the reference looks it up (a module attribute, a name imported by
another module, an entry of a dispatch table such as ``apply.ACTIONS``), through the zoo's
``Mutant.patches`` seam, so nothing of ``reference_impl`` is edited and a new rule gets its
knockouts as soon as its id is on the line that implements it.

Some knockouts no step sequence can tell from the reference (equivalent mutants):
``EQUIVALENT`` names them, each with its argument (docs/suite-strength.md repeats the
table). Nothing is called equivalent by default: a knockout no suite kills is a survivor.
"""

from __future__ import annotations
import __future__

import ast
import copy
import importlib
import inspect
import io
import re
import signal
import sys
import threading
import tokenize
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from types import CodeType, FrameType, FunctionType, ModuleType
from typing import Any

import reference_impl
from reference_impl import State, Step

from ..adapters.base import StepResult
from ..fixtures.paths import SCHEMA_DIR
from ..zoo.base import ALL, Member, Mutant, Patch

RULE = re.compile(
    r"\b(?:HW|PRODUCE|FETCH|FOLLOWER|EPOCH|TRUNC|ISR|CTRL|LAI|CRASH|RESTART|CKPT|TICK|STEP|CONSUME|MSG|INIT|LOG|OBS)"
    r"(?:-[A-Z]+)*-\d+\b"
)
"""A rule id as spec/replication.md spells it (tests/test_spec_rules.py uses the same)."""

OPERATORS = ("skip", "guard-off", "guard-on")

_CHOICE = (
    "a choice point (spec: Choice points): the reference takes Kafka's default and the other resolutions are the "
    "settled level's (settle.py), so there is no effect of the reference's to skip; the variants and their "
    "defective twins (conformance/implementations/variants.py, tests/test_choices.py) are what tests it"
)

NO_KNOCKOUT: dict[str, str] = {
    **{f"CHOICE-{n}": _CHOICE for n in range(1, 9)},
    "LOG-START-1": "a property of the state (no records below log_start) kept by the values (Log, given.py), not "
    "an effect of a step: its consequences are FETCH-LEADER-4, CONSUME-2 and LOG-START-2/3, each knocked out",
    "OBS-ANSWER-1": "the form of the observation (observe.py), not an effect of a step: dropping an answer field is "
    "what the zoo's message members do, and fixtures asserting answers kill them",
    **{
        f"INIT-{n}": "a check of a fixture's initial: block (given.py, left out: LEFT_OUT), run when a fixture "
        "loads; tests/test_initial.py pins each message"
        for n in range(1, 7)
    },
    "TRUNC-EPOCH-2": "its effect is the value truncation.offset_truncation returns when the follower knows the "
    "answer's epoch (the last statement of a function that must return one): a skip cannot leave a value out "
    "(the caller would read None and crash) and there is no guard to force; the zoo's pre-kip-279-truncation "
    "gets it wrong the way Kafka before KIP-279 did, and its fixtures kill that",
    "CTRL-ELECT-3": "its effect is the absence of an election (nobody may lead): disabling it is electing someone "
    "anyway, which the guard-on knockout of CTRL-ELECT-2 (always elect uncleanly) is",
}
"""Rules with no site on a line of a step's code, and why (docs/suite-strength.md)."""

_IN_FLIGHT_REACHES = (
    "answers in flight to a broker go the moment the session that asked ends (CRASH-1 at a crash; "
    "network.drop_unreachable_answers at every change of role, leader or epoch), so an answer still in flight "
    "always reaches its session and this drop never happens (checked on random runs: tests/test_knockout.py)"
)
_SAME_STEP = (
    "the answer is built in the very step its follower sends the request, from that follower's own incarnation "
    "and epoch, so the session that asked is the current one and the drop never happens"
)
_NO_LAI_TO_OFFLINE = (
    "a LeaderAndIsr goes only to live brokers (CTRL-ELECT-5) and a crash drops those in flight to the broker "
    "(CRASH-1), so none ever reaches an offline broker"
)
_LAI_1 = (
    "spec LAI-1: with one controller and LAI-5's in-order channel no LeaderAndIsr arrives with an epoch not "
    "newer than the broker's (an initial: state has none in flight, INIT-4); tests/test_rules.py pins it on a "
    "built state"
)
_NOT_TRUNCATING = (
    "outside leader-epoch no follower is ever truncating (LAI-3 sets it only where the generation asks for "
    "epochs; given.py refuses it in an initial: state), so the next check refuses the step with the same rule"
)

_UNKNOWN_NAME = (
    "a step naming a replica outside config.replicas never reaches an implementation: the fixture loader "
    "(conformance/fixtures/loading.py) and the corpus reader refuse it with file:line, and fuzz and explore draw only "
    "the config's replicas, so no suite can judge the answer to one"
)

_ISR_CHECK_IN_FLIGHT = (
    "maybe_shrink_isr does nothing while the leader's ISR change is in flight (isr.in_flight), so scheduling "
    "the check anyway only splits the tick at a moment where nothing happens; the checkpoint runs of the two "
    "halves write the same HW as one"
)
_HISTORY_ONLY = (
    "unclean_elections is a history variable (spec: History variables): no observation carries it, so a "
    "run that does not count an unclean election looks the same step by step"
)
_FOLLOWER_KNOWS_EPOCH = (
    "the follower asks for its own latest epoch e; the leader answers an epoch at most e (EPOCH-CACHE-3), and "
    "the follower's cache, which holds e, answers any epoch at most e with a defined entry (the first epoch's "
    "start below it, KAFKA-7415): the 'no epoch at or below the answer's' case never arises (checked on random "
    "runs: tests/test_knockout.py)"
)

_HARNESS_LABEL = (
    "a produce id is the harness's label for a request (PRODUCE-PRE-1; Kafka has none): fuzz, explore and the "
    "corpus draw a fresh id for every produce (enabled.py), and no implementation is asked to refuse a repeated "
    "one, so no suite states that refusal (the toy broker of docs/adapters.md does not refuse one)"
)

_LAST_EPOCH_SENT_ONLY_WHERE_CARRIED = (
    "the follower sends its last fetched epoch only where the generation carries it (follower.send_fetch, "
    "profile.fetch_carries_last_epoch; send_fetch is handle_fetch's only caller), so with the generation test "
    "forced the 'is not None' test it keeps is false exactly where the forced one was"
)

_SAME_CACHE_WRITTEN_BACK = (
    "with the test forced, a cache that truncate_from_start left as it was (no entry started below the new log "
    "start) is written back unchanged: only the fired entry differs, and no observation carries fired rules"
)

_ABANDON_NOTHING_NEW = (
    "with the test forced, a leader with no proposal it still waits on gets its proposals marked abandoned again "
    "(none, or ones already abandoned): the state is unchanged, only the fired entry differs, and no observation "
    "carries fired rules"
)

EQUIVALENT: dict[str, str] = {
    "ISR-ALTER-6:guard-on:alter_partition.abandon_proposals:1": _ABANDON_NOTHING_NEW,
    "EPOCH-CACHE-4:guard-on:replica_ops.raise_log_start:1": _SAME_CACHE_WRITTEN_BACK,
    "FETCH-LEADER-2:guard-on:leader_fetch.handle_fetch:1": _LAST_EPOCH_SENT_ONLY_WHERE_CARRIED,
    "PRODUCE-PRE-1:skip:producer.produce_refused:1": _HARNESS_LABEL,
    "PRODUCE-PRE-1:guard-off:producer.produce_refused:1": _HARNESS_LABEL,
    "ISR-ALTER-1:skip:clock._next_isr_check:1": _ISR_CHECK_IN_FLIGHT,
    "ISR-ALTER-1:guard-off:clock._next_isr_check:1": _ISR_CHECK_IN_FLIGHT,
    "CTRL-ELECT-2:skip:controller._offline_election:1": _HISTORY_ONLY,
    "TRUNC-EPOCH-4:skip:truncation.offset_truncation:1": _FOLLOWER_KNOWS_EPOCH,
    "TRUNC-EPOCH-4:guard-off:truncation.offset_truncation:1": _FOLLOWER_KNOWS_EPOCH,
    "STEP-PRE-1:skip:apply._unknown_replica:1": _UNKNOWN_NAME,
    "STEP-PRE-1:guard-off:apply._unknown_replica:1": _UNKNOWN_NAME,
    "PRODUCE-PRE-1:skip:producer.produce_refused:2": _UNKNOWN_NAME,
    "PRODUCE-PRE-1:guard-off:producer.produce_refused:2": _UNKNOWN_NAME,
    "CTRL-ELECT-4:skip:controller.elect_refused:1": _UNKNOWN_NAME,
    "CTRL-ELECT-4:guard-off:controller.elect_refused:1": _UNKNOWN_NAME,
    "CTRL-ELECT-5:skip:controller._send_leader_and_isr:1": _UNKNOWN_NAME,
    "CTRL-ELECT-5:guard-off:controller._send_leader_and_isr:1": _UNKNOWN_NAME,
    "MSG-DROP-1:skip:controller.apply_leader_and_isr:1": _NO_LAI_TO_OFFLINE,
    "MSG-DROP-1:guard-off:controller.apply_leader_and_isr:1": _NO_LAI_TO_OFFLINE,
    "MSG-DROP-1:skip:epoch_leader.handle_epoch_request:1": _SAME_STEP,
    "MSG-DROP-1:guard-off:epoch_leader.handle_epoch_request:1": _SAME_STEP,
    "MSG-DROP-1:skip:follower.deliver_fetch:1": _IN_FLIGHT_REACHES,
    "MSG-DROP-1:guard-off:follower.deliver_fetch:1": _IN_FLIGHT_REACHES,
    "MSG-DROP-1:skip:follower.deliver_epoch:1": _IN_FLIGHT_REACHES,
    "MSG-DROP-1:guard-off:follower.deliver_epoch:1": _IN_FLIGHT_REACHES,
    "LAI-1:skip:controller.apply_leader_and_isr:1": _LAI_1,
    "LAI-1:guard-off:controller.apply_leader_and_isr:1": _LAI_1,
    "EPOCH-PRE-1:skip:follower.epoch_request_refused:1": _NOT_TRUNCATING,
    "EPOCH-PRE-1:guard-off:follower.epoch_request_refused:1": _NOT_TRUNCATING,
}
"""Knockout id -> why no step sequence tells it from the reference (docs/suite-strength.md)."""

_NO_CACHE_UNDER_HT = (
    "under hw-truncation no replica ever holds an epoch-cache entry: every write to a cache is guarded by "
    "profile.keeps_epoch_cache (PRODUCE-3, FOLLOWER-FETCH-2, LAI-2's EPOCH-CACHE-1, initial.py), given.py refuses "
    "one in an initial: state, and the others only shorten a cache (EPOCH-CACHE-2, RESTART-3, LOG-START-3); so the "
    "forced branch cuts an empty cache and writes the replica back unchanged (checked on random runs: "
    "tests/test_knockout.py)"
)

_NO_EPOCH_ANSWER_IN_FLIGHT = (
    "outside leader-epoch no follower sends OffsetsForLeaderEpoch (EPOCH-PRE-1: profile.asks_epoch_before_fetch; "
    "epoch_round is refused with it) and an initial: state carries no message in flight, so no epoch answer is ever "
    "in flight: the reference refuses every deliver_epoch there too, and forcing the refusal changes nothing "
    "(checked on random runs: tests/test_knockout.py)"
)

_NO_PROPOSAL_IN_FLIGHT = (
    "outside diverging-epoch the leader writes the ISR itself (ISR-WRITE-1: profile.isr_change_via_alter_partition "
    "is false) and an initial: state carries no message in flight, so no AlterPartition proposal is ever in flight: "
    "the reference refuses every deliver_alter_partition there too, and forcing the refusal changes nothing "
    "(checked on random runs: tests/test_knockout.py)"
)

EQUIVALENT_IN: dict[str, dict[str, str]] = {
    "TRUNC-2:guard-on:replica_ops.truncate:1": {"hw-truncation": _NO_CACHE_UNDER_HT},
    "EPOCH-CACHE-2:guard-on:replica_ops.truncate:1": {"hw-truncation": _NO_CACHE_UNDER_HT},
    "EPOCH-DELIVER-PRE-1:guard-on:follower.deliver_epoch_refused:1": {
        "hw-truncation": _NO_EPOCH_ANSWER_IN_FLIGHT,
        "diverging-epoch": _NO_EPOCH_ANSWER_IN_FLIGHT,
    },
    "ISR-ALTER-PRE-1:guard-on:controller.deliver_alter_partition_refused:1": {
        "hw-truncation": _NO_PROPOSAL_IN_FLIGHT,
        "leader-epoch": _NO_PROPOSAL_IN_FLIGHT,
    },
}
"""Knockout id -> generation -> why no step sequence of that generation tells it from the
reference, for knockouts that differ in other generations (so they are not ``EQUIVALENT``):
a case of that generation can never kill them, so ``knockout_sweep`` does not count the
generation where the rule applies (docs/suite-strength.md)."""


def spec_rules() -> tuple[str, ...]:
    """Every rule spec/replication.md defines (``- **ID** —``), in the spec's order."""
    text = (SCHEMA_DIR / "replication.md").read_text(encoding="utf-8")
    return tuple(dict.fromkeys(re.findall(r"^- \*\*([A-Z][A-Z0-9-]*-\d+)\*\*", text, flags=re.M)))


@dataclass(frozen=True)
class Site:
    """A line of the reference naming a rule: where its knockouts are made."""

    rule: str
    module: str
    """The module's short name (``producer`` for ``reference_impl.producer``)."""
    function: str
    """The top-level function holding the line."""
    line: int
    comment: bool
    """True for a comment on a line of its own (it marks the paragraph below it)."""
    column: int = 0


@dataclass(frozen=True)
class Turn:
    """The way a run goes at one ``if``: its test spans lines ``first..last``, its body
    starts at ``body``; ``into`` is True when the run must enter the body (the test was
    true), False when it must not. A forced test differs from the reference only where the
    reference went the other way (``Knockout.turn``), which the trace of a run shows as the
    line that follows the test's (``Reach.turns``)."""

    first: int
    last: int
    body: int
    into: bool

    def taken(self, module: str, reach: Reach) -> bool:
        """Whether ``reach`` went this way at the ``if`` in ``module``."""
        for after in reach.after.get(module, {}).get(self.last, ()):
            if self.into and after == self.body:
                return True
            if not self.into and after != self.body and not self.first <= after <= self.last:
                return True
        return False


@dataclass
class Reach:
    """What a run executed of ``reference_impl``: the ``(module, line)`` pairs, and for
    each line the lines that followed it in the same frame (-1: the function returned)."""

    lines: set[tuple[str, int]]
    after: dict[str, dict[int, set[int]]]


@dataclass(frozen=True)
class Knockout:
    """One mutant: ``operator`` applied at ``site``."""

    id: str
    """``RULE:operator:module.function:N``, N the site's rank among the rule's sites in that
    function: stable while the code around it changes."""
    rule: str
    operator: str
    site: Site
    key: str
    """The changed function's AST dump: knockouts with the same key are the same mutant."""
    line: int = 0
    """The line a run must reach for the knockout to differ (the forced ``if``, the first
    statement skipped): a generation whose runs never reach it cannot tell it apart."""
    turn: Turn | None = None
    """For a forced ``if``: the way the reference must go at it for the knockout to differ
    (forcing a test to the value it has anyway changes nothing)."""

    @property
    def where(self) -> str:
        return f"reference_impl/{self.site.module}.py:{self.site.line} ({self.site.function})"


# --- finding the sites -----------------------------------------------------------------


LEFT_OUT = {
    "given": "the checks of a fixture's initial: block: the loader refuses a state they reject before any "
    "implementation runs, so a knocked-out check changes nothing a valid fixture can show (tests/test_initial.py)",
}
"""Modules of ``reference_impl`` whose rule sites get no knockout, and why."""


def _modules() -> list[str]:
    folder = Path(reference_impl.__file__).parent
    return sorted(p.stem for p in folder.glob("*.py") if p.stem != "__init__" and p.stem not in LEFT_OUT)


@cache
def _parsed(module: str) -> tuple[str, ast.Module]:
    path = Path(reference_impl.__file__).parent / f"{module}.py"
    text = path.read_text(encoding="utf-8")
    return text, ast.parse(text, filename=str(path))


def _docstrings(tree: ast.Module) -> set[int]:
    """The ids of the string nodes that are docstrings (they describe, they do not implement)."""
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                out.add(id(first.value))
    return out


def sites(modules: Iterable[str] | None = None) -> list[Site]:
    """Every rule-naming line inside a top-level function of ``reference_impl`` (string
    literals and comments; docstrings left out)."""
    out: list[Site] = []
    for module in modules or _modules():
        text, tree = _parsed(module)
        functions = [n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]

        def owner(line: int, functions: list[ast.FunctionDef | ast.AsyncFunctionDef] = functions) -> str | None:
            for f in functions:
                if f.lineno <= line <= (f.end_lineno or f.lineno):
                    return f.name
            return None

        docs = _docstrings(tree)
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docs:
                name = owner(node.lineno)
                if name is not None:
                    for rule in dict.fromkeys(RULE.findall(node.value)):
                        out.append(Site(rule, module, name, node.lineno, False))
        for token in tokenize.generate_tokens(io.StringIO(text).readline):
            if token.type != tokenize.COMMENT:
                continue
            line, column = token.start
            name = owner(line)
            if name is None:
                continue
            alone = not token.line[:column].strip()
            for rule in dict.fromkeys(RULE.findall(token.string)):
                out.append(Site(rule, module, name, line, alone, column))
    return sorted(set(out), key=lambda s: (s.module, s.line, s.rule, s.comment))


# --- the operators ---------------------------------------------------------------------

_Body = list[ast.stmt]


def _bodies(node: ast.AST) -> Iterator[tuple[ast.AST, str, _Body]]:
    for parent in ast.walk(node):
        for name in ("body", "orelse", "finalbody"):
            value = getattr(parent, name, None)
            if isinstance(value, list) and value and isinstance(value[0], ast.stmt):
                yield parent, name, value


def _is_fired(stmt: ast.stmt) -> bool:
    """Bookkeeping, no effect: ``d.fired.append(...)`` / ``d.fired.extend(...)``, or
    appending rule ids to a list of them (``rules.append("ISR-EXPAND-2")``)."""
    if not isinstance(stmt, ast.Expr) or not isinstance(stmt.value, ast.Call):
        return False
    call = stmt.value
    func = call.func
    if not isinstance(func, ast.Attribute) or func.attr not in ("append", "extend"):
        return False
    if isinstance(func.value, ast.Attribute) and func.value.attr == "fired":
        return True
    return bool(call.args) and all(
        isinstance(c, ast.Constant) and isinstance(c.value, str) and RULE.fullmatch(c.value)
        for arg in call.args
        for c in (arg.elts if isinstance(arg, ast.Tuple) else [arg])
    )


def _locate(function: ast.AST, site: Site) -> tuple[ast.AST, str, _Body, int] | None:
    """The statement the site marks: (parent, field, body, index)."""
    best: tuple[int, tuple[ast.AST, str, _Body, int]] | None = None
    for parent, name, body in _bodies(function):
        for i, stmt in enumerate(body):
            end = stmt.end_lineno or stmt.lineno
            if site.comment:
                # the first statement below the comment, at the comment's indentation
                if stmt.col_offset != site.column or stmt.lineno <= site.line:
                    continue
                if i > 0 and (body[i - 1].end_lineno or 0) >= site.line:
                    continue
                rank = stmt.lineno - site.line
            else:
                if not stmt.lineno <= site.line <= end:
                    continue
                rank = end - stmt.lineno
            if best is None or rank < best[0]:
                best = (rank, (parent, name, body, i))
    return best[1] if best else None


_COMPOUND = (ast.If, ast.For, ast.While, ast.With, ast.Try, ast.FunctionDef)


def _is_docstring(stmt: ast.stmt) -> bool:
    return isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant) and isinstance(stmt.value.value, str)


def _paragraph(body: _Body, i: int, backwards: bool) -> tuple[int, int]:
    """The statements around ``body[i]`` with no blank or comment line between them;
    backwards only over simple statements (a ``d.fired`` line follows the effect it
    names, not the guards before it), never over a docstring."""
    start, end = i, i
    while (
        backwards
        and start > 0
        and (body[start - 1].end_lineno or 0) + 1 == body[start].lineno
        and not isinstance(body[start - 1], _COMPOUND)
        and not _is_docstring(body[start - 1])
    ):
        start -= 1
    while end + 1 < len(body) and (body[end].end_lineno or 0) + 1 == body[end + 1].lineno:
        end += 1
    return start, end


def _loads_after(function: ast.AST, line: int) -> set[str]:
    return {
        n.id for n in ast.walk(function) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load) and n.lineno > line
    }


def _assigns(stmt: ast.stmt) -> set[str]:
    targets: list[ast.expr] = []
    if isinstance(stmt, ast.Assign):
        targets = stmt.targets
    elif isinstance(stmt, (ast.AnnAssign, ast.AugAssign)):
        targets = [stmt.target]
    names: set[str] = set()
    for target in targets:
        elements = target.elts if isinstance(target, ast.Tuple) else [target]
        names |= {e.id for e in elements if isinstance(e, ast.Name)}
    return names


def _needs_a_value(function: ast.AST) -> bool:
    """Whether ``function`` must return a value: annotated with a type that does not admit
    None (``-> bool``, ``-> Truncation``). Falling off its end would return None, which no
    implementation can (the caller reads the value and crashes), so a skip keeps its
    ``return`` statements; a function returning ``X | None`` may fall off (None is one of
    its values: ``out_of_sync_from`` skipped says "never out of sync")."""
    returns = getattr(function, "returns", None)
    return returns is not None and "None" not in ast.unparse(returns)


def _loads(stmt: ast.stmt) -> set[str]:
    return {n.id for n in ast.walk(stmt) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}


def _kept(paragraph: _Body, needed: set[str], returns: bool = False) -> _Body:
    """The statements of ``paragraph`` a skip keeps: its ``return`` statements when
    ``returns`` (the paragraph ends a function that must return a value, ``_needs_a_value``;
    a ``return`` inside a branch is skipped: the run goes on below it), the assignments to
    names read further down (``needed``) or by those, and in turn the ones those read
    (``records`` kept for a later read keeps the ``epoch`` it is built from), so a skip
    leaves out effects and never leaves a name undefined."""
    kept: _Body = [s for s in paragraph if returns and isinstance(s, ast.Return)]
    needed = needed | {name for s in kept for name in _loads(s)}
    while True:
        more = [s for s in paragraph if s not in kept and _assigns(s) & needed]
        if not more:
            return [s for s in paragraph if s in kept]
        kept += more
        for s in more:
            needed |= _loads(s)


def _skip(function: ast.AST, site: Site) -> tuple[int, Turn | None]:
    """Leave out the statements the site marks; the first one's line (0: nothing to skip)
    and, when that is one ``if`` without ``else``, the way into its body (skipping an ``if``
    whose test is false changes nothing: the reference's tests have no side effects)."""
    found = _locate(function, site)
    if found is None:
        return 0, None
    _, _, body, i = found
    if site.comment:
        start, end = _paragraph(body, i, backwards=False)
    elif _is_fired(body[i]):
        start, end = _paragraph(body, i, backwards=True)
    else:
        start, end = i, i
    last = body[end].end_lineno or body[end].lineno
    ending = body is getattr(function, "body", None) and _needs_a_value(function)
    kept = _kept(body[start : end + 1], _loads_after(function, last), ending)
    removed = [s for s in body[start : end + 1] if s not in kept]
    if all(_is_fired(s) for s in removed):
        return 0, None
    body[start : end + 1] = kept
    if not body:
        body.append(ast.Pass())
    first = removed[0]
    if len(removed) == 1 and isinstance(first, ast.If) and not first.orelse:
        return first.lineno, Turn(first.test.lineno, first.test.end_lineno or first.lineno, first.body[0].lineno, True)
    return first.lineno, None


def _conjuncts(test: ast.expr) -> list[ast.expr]:
    if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And):
        return list(test.values)
    return [test]


def _is_existence_check(test: ast.expr, body: _Body | None, module: str = "") -> bool:
    """``x is not None`` beside other conditions (``body`` None: the others are the rule's
    condition, this one the type's), or alone where ``body`` dereferences ``x`` (unpacks
    it, compares or adds it, reads an attribute or an item of it, or passes it to a
    function of the reference whose parameter does not take None): forcing it on would
    read a value that is not there, which no implementation can do (it raises on the first
    step that gets there). Alone and only passed on where None is a value
    (``answer(error=error)``), forcing it is a mutant of its own (every answer an error answer)."""
    if not (
        isinstance(test, ast.Compare)
        and len(test.ops) == 1
        and isinstance(test.ops[0], ast.IsNot)
        and isinstance(test.comparators[0], ast.Constant)
        and test.comparators[0].value is None
    ):
        return False
    if body is None:
        return True
    checked = ast.dump(test.left)
    for stmt in body:
        for node in ast.walk(stmt):
            if _dereferences(node, checked) or _passed_where_none_is_not_taken(node, checked, module):
                return True
    return False


def _passed_where_none_is_not_taken(node: ast.AST, checked: str, module: str) -> bool:
    """Whether ``node`` calls a function of the reference with the expression dumped as
    ``checked`` for a parameter annotated without None (``leader_id: str``)."""
    if not isinstance(node, ast.Call) or not module:
        return False
    callee: Any = importlib.import_module(f"reference_impl.{module}")
    for name in _dotted(node.func):
        callee = getattr(callee, name, None)
    if not callable(callee) or not str(getattr(callee, "__module__", "")).startswith("reference_impl"):
        return False
    try:
        parameters = list(inspect.signature(callee).parameters.values())
    except (TypeError, ValueError):  # pragma: no cover - a builtin
        return False
    passed = [(parameters[i] if i < len(parameters) else None, a) for i, a in enumerate(node.args)]
    by_name = {p.name: p for p in parameters}
    passed += [(by_name.get(k.arg or ""), k.value) for k in node.keywords]
    return any(
        parameter is not None
        and ast.dump(argument) == checked
        and parameter.annotation is not inspect.Parameter.empty
        and "None" not in str(parameter.annotation)
        for parameter, argument in passed
    )


def _dotted(func: ast.expr) -> list[str]:
    """``a.b.c`` as ``["a", "b", "c"]`` (a name no module has for a call of anything else)."""
    names: list[str] = []
    while isinstance(func, ast.Attribute):
        names.insert(0, func.attr)
        func = func.value
    return [func.id, *names] if isinstance(func, ast.Name) else ["<call>"]


def _dereferences(node: ast.AST, checked: str) -> bool:
    """Whether ``node`` reads into the expression dumped as ``checked``."""
    if isinstance(node, (ast.Attribute, ast.Subscript)):
        return ast.dump(node.value) == checked
    if isinstance(node, ast.Compare) and not all(isinstance(o, (ast.Is, ast.IsNot)) for o in node.ops):
        return checked in (ast.dump(e) for e in (node.left, *node.comparators))
    if isinstance(node, ast.BinOp):
        return checked in (ast.dump(node.left), ast.dump(node.right))
    if isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Tuple):
        return ast.dump(node.value) == checked
    return False


def _guard(function: ast.AST, site: Site, on: bool) -> tuple[int, Turn | None]:
    """Force the ``if`` around the site; the line of its test (0: no ``if`` to force) and
    the way the reference must go there for the change to matter."""
    found = _locate(function, site)
    if found is None:
        return 0, None
    parents = {id(child): (parent, name) for parent, name, body in _bodies(function) for child in body}
    node: ast.AST = found[2][found[3]]
    while id(node) in parents:
        parent, name = parents[id(node)]
        if isinstance(parent, ast.If):
            branch = parent.body if name == "body" else parent.orelse
            if all(_is_fired(s) for s in branch) and not parent.orelse:
                return 0, None
            taken = on if name == "body" else not on
            line = parent.test.lineno
            turn = Turn(line, parent.test.end_lineno or line, parent.body[0].lineno, not taken)
            forced: ast.expr = ast.Constant(taken)
            if taken:
                # the body may read what the test checks exists: those checks stay
                tests = _conjuncts(parent.test)
                alone = parent.body if len(tests) == 1 else None
                checks = [c for c in tests if _is_existence_check(c, alone, site.module)]
                if checks and len(checks) == len(tests):
                    return 0, None  # nothing but existence checks: no slip forces one
                if checks:
                    forced = checks[0] if len(checks) == 1 else ast.BoolOp(ast.And(), checks)
            parent.test = ast.copy_location(forced, parent.test)
            return line, turn
        node = parent
    return 0, None


def _function(site: Site) -> ast.FunctionDef | ast.AsyncFunctionDef:
    _, tree = _parsed(site.module)
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == site.function:
            return node
    raise LookupError(f"reference_impl/{site.module}.py has no function {site.function}")


def mutate(site: Site, operator: str) -> tuple[ast.FunctionDef | ast.AsyncFunctionDef, int, Turn | None] | None:
    """The site's function with ``operator`` applied, the line a run must reach for the
    change to matter and (a forced ``if``) the way it must go there, or None where the
    operator does not apply."""
    function = copy.deepcopy(_function(site))
    turn: Turn | None = None
    if operator == "skip":
        line, turn = _skip(function, site)
    elif operator in ("guard-off", "guard-on"):
        line, turn = _guard(function, site, on=operator == "guard-on")
    else:
        raise ValueError(f"unknown knockout operator {operator!r} (one of {', '.join(OPERATORS)})")
    return (function, line, turn) if line else None


def knockouts(rules: Iterable[str] | None = None) -> list[Knockout]:
    """Every knockout of ``rules`` (default: every rule the spec defines), in spec order."""
    wanted = list(rules) if rules is not None else list(spec_rules())
    by_rule: dict[str, list[Site]] = {}
    for site in sites():
        by_rule.setdefault(site.rule, []).append(site)
    out: list[Knockout] = []
    for rule in wanted:
        seen: set[str] = set()
        rank: dict[str, int] = {}
        for site in by_rule.get(rule, []):
            where = f"{site.module}.{site.function}"
            rank[where] = rank.get(where, 0) + 1
            for operator in OPERATORS:
                mutated = mutate(site, operator)
                if mutated is None:
                    continue
                changed, line, turn = mutated
                key = f"{site.module}:{ast.dump(changed)}"
                if key in seen:
                    continue
                seen.add(key)
                out.append(Knockout(f"{rule}:{operator}:{where}:{rank[where]}", rule, operator, site, key, line, turn))
    return out


def reached_lines(run: Callable[[], object]) -> set[tuple[str, int]]:
    """The ``(module, line)`` of ``reference_impl`` that ``run()`` executes."""
    return reached(run).lines


def reach_of(knockout: Knockout, reach: Reach) -> bool:
    """Whether a run that executed ``reach`` can tell ``knockout`` from the reference: it
    ran the changed line and, at a forced ``if``, went the way the knockout does not."""
    module = knockout.site.module
    if (module, knockout.line) not in reach.lines:
        return False
    return knockout.turn is None or knockout.turn.taken(module, reach)


def reached(run: Callable[[], object]) -> Reach:
    """What ``run()`` executes of ``reference_impl`` (a trace function over the
    reference's files only): its lines, and which line followed which in each frame."""
    folder = str(Path(reference_impl.__file__).parent)
    seen: set[tuple[str, int]] = set()
    after: dict[str, dict[int, set[int]]] = {}
    last: dict[int, tuple[str, int]] = {}

    def local(frame: FrameType, event: str, arg: object) -> Any:
        if event == "line":
            module = Path(frame.f_code.co_filename).stem
            seen.add((module, frame.f_lineno))
            previous = last.get(id(frame))
            if previous is not None:
                after.setdefault(module, {}).setdefault(previous[1], set()).add(frame.f_lineno)
            last[id(frame)] = (module, frame.f_lineno)
        elif event == "return":
            previous = last.pop(id(frame), None)
            if previous is not None:
                after.setdefault(previous[0], {}).setdefault(previous[1], set()).add(-1)
        return local

    def calls(frame: FrameType, event: str, arg: object) -> Any:
        if event == "call" and frame.f_code.co_filename.startswith(folder):
            return local
        return None

    previous = sys.gettrace()
    sys.settrace(calls)
    try:
        run()
    finally:
        sys.settrace(previous)
    return Reach(seen, after)


# --- the mutant ------------------------------------------------------------------------


@cache
def _compiled(key: str, site: Site, operator: str) -> CodeType:
    mutated = mutate(site, operator)
    if mutated is None:  # pragma: no cover - the key came from mutate
        raise ValueError(f"{site}: {operator} does not apply")
    module = ast.Module(body=[mutated[0]], type_ignores=[])
    ast.fix_missing_locations(module)
    path = str(Path(reference_impl.__file__).parent / f"{site.module}.py")
    flags = __future__.annotations.compiler_flag
    code: CodeType = compile(module, f"{path} (knockout {operator})", "exec", flags=flags, dont_inherit=True)
    return code


def _replacement(knockout: Knockout) -> tuple[FunctionType, FunctionType]:
    module = importlib.import_module(f"reference_impl.{knockout.site.module}")
    original = getattr(module, knockout.site.function)
    namespace: dict[str, Any] = {}
    exec(_compiled(knockout.key, knockout.site, knockout.operator), vars(module), namespace)
    return original, namespace[knockout.site.function]


def _references(original: Any, replacement: Any) -> list[Patch]:
    """Every place the reference looks ``original`` up: module attributes (the defining
    module and every ``from . import``), and the values of module-level dicts."""
    out: list[Patch] = []
    for name, module in list(sys.modules.items()):
        if not isinstance(module, ModuleType) or not (name == "reference_impl" or name.startswith("reference_impl.")):
            continue
        for attribute, value in list(vars(module).items()):
            if value is original:
                out.append((module, attribute, replacement))
            elif isinstance(value, dict):
                out += [(value, k, replacement) for k, v in list(value.items()) if v is original]
    return out


STEP_SECONDS = 1.0
"""How much CPU time one step of a knockout may take before it counts as hanging (a
reference step takes microseconds; a knockout that skips a loop's progress loops for ever).
CPU time of this process, not wall time: on a loaded machine a step waits for a core
without using its budget, so a loaded run gives the same verdict as an idle one."""


NOT_RUN_AGAIN = "not run again"
"""How the error of a case skipped after a knockout hung ends (it proves nothing: not counted)."""


class KnockoutHangs(RuntimeError):
    """A knockout's step used more than ``STEP_SECONDS`` of CPU: reported as the fixture's error."""


@contextmanager
def deadline(seconds: float = STEP_SECONDS) -> Iterator[None]:
    """Raise ``KnockoutHangs`` in the block once it has used ``seconds`` of CPU time (a
    virtual timer, ``ITIMER_VIRTUAL``: it runs only while this process runs, so waiting for
    a core on a loaded machine does not count; only in the main thread, elsewhere the
    block runs unguarded)."""
    if threading.current_thread() is not threading.main_thread() or not hasattr(signal, "setitimer"):
        yield
        return

    def expired(signum: int, frame: Any) -> None:
        raise KnockoutHangs(f"a step used {seconds:g} s of CPU (the knockout loops)")

    previous = signal.signal(signal.SIGVTALRM, expired)
    signal.setitimer(signal.ITIMER_VIRTUAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_VIRTUAL, 0)
        signal.signal(signal.SIGVTALRM, previous)


def member(knockout: Knockout, number: int = 0) -> Member:
    """The knockout as a zoo-style member (so ``sensitivity.judge``, fuzz and explore run it)."""
    original, replacement = _replacement(knockout)
    patches = tuple(_references(original, replacement))

    class Knocked(Mutant):
        def patches(self) -> Iterable[Patch]:
            return patches

        hung = ""
        """Set at the first hang: every later call fails at once (no second wait)."""

        @contextmanager
        def guarded(self) -> Iterator[None]:
            if Knocked.hung:
                raise KnockoutHangs(Knocked.hung)
            try:
                with deadline():
                    yield
            except KnockoutHangs as exc:
                Knocked.hung = f"{exc} earlier; {NOT_RUN_AGAIN}"
                raise

        def reset(self, config: dict[str, Any], initial: dict[str, Any] | None = None) -> None:
            with self.guarded():
                super().reset(config, initial)

        def step(self, step: dict[str, Any]) -> StepResult:
            with self.guarded():
                return super().step(step)

        def advance(self, state: State, step: Step) -> State:
            with self.guarded():
                return super().advance(state, step)

    Knocked.__doc__ = f"{knockout.rule} knocked out ({knockout.operator} at {knockout.where})."
    Knocked.__name__ = f"Knockout_{number}"
    entry = Member(knockout.id, number, f"knockout of {knockout.rule}", ALL, (knockout.rule,), Knocked)
    Knocked.member = entry
    return entry
