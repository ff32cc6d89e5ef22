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


# A rule id on a line that records the rule firing (``d.fired``), where the effect is the
# line above it or the function it sits in, or on a value read later: the knockout
# operators build no mutant there (skipping it changes only the bookkeeping, or keeps a
# value read further down), though the line is where the rule takes effect.
NOT_MUTABLE: dict[tuple[str, str, str], str] = {
    ("broker", "restart", "RESTART-3"): "the fired entry of the cache reload on the line above",
    ("broker", "restart", "EPOCH-CACHE-2"): "the fired entry of the cache reload on the line above",
    ("epoch_leader", "answer_epoch_query", "EPOCH-QUERY-3"): "fired entries of the -1 readings beside them",
    ("isr", "maybe_expand_isr", "ISR-EXPAND-1"): "the fired entry list started once the guard above passed",
    ("isr", "maybe_shrink_isr", "ISR-SHRINK-1"): "which of the two shrink rules is recorded",
    ("isr", "maybe_shrink_isr", "ISR-SHRINK-2"): "which of the two shrink rules is recorded",
    ("leader_fetch", "handle_fetch", "FETCH-LEADER-3"): "the HW sampled before the fetch updates it, read below",
    ("replica_ops", "truncate", "EPOCH-CACHE-2"): "the fired entry of the cache truncation above",
}


def _is_documentation(node: ast.Constant, parents: dict[int, ast.AST]) -> bool:
    """A docstring or an attribute docstring (a bare string statement), or the
    ``description`` of a JSON Schema fragment: prose about a rule, not its implementation."""
    parent = parents.get(id(node))
    if isinstance(parent, ast.Expr):
        return True
    if isinstance(parent, ast.Dict):
        keys = [k.value for k, v in zip(parent.keys, parent.values, strict=True) if v is node and k is not None]
        return keys == ["description"]  # type: ignore[comparison-overlap]
    return False


def test_rule_ids_mark_only_implementing_lines() -> None:
    """Outside prose, a rule id sits only inside a function, on a line the knockouts can
    change (so it does something: tests/test_knockout.py, the sweep) or on one of the
    few recording lines listed in ``NOT_MUTABLE``. An id on a comment that only mentions
    a rule, far from its code, would send a reader (and a knockout) to the wrong line."""
    from conformance.search import knockout

    wrong: list[str] = []
    for path in sorted((HOME / "reference_impl").glob("*.py")):
        text = path.read_text(encoding="utf-8")
        tree = ast.parse(text)
        functions = [n for n in tree.body if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)]
        parents = {id(child): node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}

        def inside(line: int, functions: list[ast.FunctionDef | ast.AsyncFunctionDef] = functions) -> bool:
            return any(f.lineno <= line <= (f.end_lineno or f.lineno) for f in functions)

        for node in ast.walk(tree):
            prose = not isinstance(node, ast.Constant) or not isinstance(node.value, str) or not RULE.search(node.value)
            if not prose and not _is_documentation(node, parents) and not inside(node.lineno):  # type: ignore[arg-type]
                wrong.append(f"{path.name}:{node.lineno}: a rule id outside any function")
        for token in tokenize.generate_tokens(io.StringIO(text).readline):
            if token.type == tokenize.COMMENT and RULE.search(token.string) and not inside(token.start[0]):
                wrong.append(f"{path.name}:{token.start[0]}: a comment naming a rule outside any function")
    listed = set()
    for site in knockout.sites():
        if site.rule in knockout.NO_KNOCKOUT:
            continue
        key = (site.module, site.function, site.rule)
        if any(knockout.mutate(site, operator) is not None for operator in knockout.OPERATORS):
            continue
        if key in NOT_MUTABLE:
            listed.add(key)
            continue
        wrong.append(f"{site.module}.py:{site.line}: {site.rule} marks a line no knockout can change")
    assert not wrong, "\n".join(wrong)
    assert listed == set(NOT_MUTABLE), f"stale NOT_MUTABLE entries: {sorted(set(NOT_MUTABLE) - listed)}"
