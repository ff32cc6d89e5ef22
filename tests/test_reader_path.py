"""The reader's path: from a fixture step to the line implementing its rule in three hops.

1. a fixture step's ``kind`` names its row of the step table (``reference_impl/steps.py:
   STEP_KINDS``), which lists the rule families that kind can fire
   (tests/test_step_kinds.py checks the list against what the reference fires);
2. ``grep -n RULE-ID reference_impl/`` finds the rule's lines: every rule of the spec has a
   line in the reference that implements it, marked with its id (a ``fired`` entry, a
   rejection or error message, a ``#`` comment on the block, or the docstring of the
   function that is the rule), not only a module's summary docstring;
3. that line.

A rule stated in one function is called, not re-derived, elsewhere: the ISR-SHRINK
predicate (``isr.out_of_sync_from``) serves the expiry check, the clock's search for the
next check that drops someone, and the zoo's off-by-one member.
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
from pathlib import Path

from reference_impl import clock, isr
from reference_impl.steps import STEP_KINDS

HOME = Path(__file__).resolve().parents[1]
SPEC = (HOME / "spec" / "replication.md").read_text(encoding="utf-8")
DEFINED = {rule for rule in re.findall(r"^- \*\*([A-Z][A-Z-]*-\d+)\*\*", SPEC, flags=re.M)}
RULE = re.compile(r"\b[A-Z]+(?:-[A-Z]+)*-\d+\b")


def rule_sites() -> dict[str, set[tuple[str, int]]]:
    """Rule id -> the (file, line) pairs of the reference that mark its implementation."""
    sites: dict[str, set[tuple[str, int]]] = {}
    for path in sorted((HOME / "reference_impl").glob("*.py")):
        text = path.read_text(encoding="utf-8")
        tree = ast.parse(text)
        module_doc = tree.body[0].value if tree.body and isinstance(tree.body[0], ast.Expr) else None
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and node is not module_doc:
                for m in RULE.finditer(node.value):
                    sites.setdefault(m.group(0), set()).add((path.name, node.lineno))
        for token in tokenize.generate_tokens(io.StringIO(text).readline):
            if token.type == tokenize.COMMENT:
                for m in RULE.finditer(token.string):
                    sites.setdefault(m.group(0), set()).add((path.name, token.start[0]))
    return sites


def test_every_rule_has_an_implementing_line() -> None:
    sites = rule_sites()
    # choice points are where another implementation may differ; the reference takes
    # Kafka's default and marks none (tests/test_choices.py pins each)
    missing = sorted(rule for rule in DEFINED if not rule.startswith("CHOICE-") and rule not in sites)
    assert not missing, f"rules with no implementing line in reference_impl/: {missing}"


def test_each_step_kind_reaches_its_rules_in_three_hops() -> None:
    sites = rule_sites()
    families = {re.sub(r"-\d+$", "", rule) for rule in sites}
    for row in STEP_KINDS:
        assert row.rules, row.kind
        unreached = [family for family in row.rules if family not in families]
        assert not unreached, (row.kind, unreached)
        module = row.action.partition(".")[0]
        assert (HOME / "reference_impl" / f"{module}.py").is_file(), row.action


def test_isr_shrink_is_stated_once() -> None:
    assert "out_of_sync_from" in clock._next_isr_check.__code__.co_names
    assert "out_of_sync_from" in isr.out_of_sync_followers.__code__.co_names
    zoo = (HOME / "conformance" / "zoo" / "isr.py").read_text(encoding="utf-8")
    assert "_next_isr_check" not in zoo and "last_caught_up_ms + lag" not in zoo
