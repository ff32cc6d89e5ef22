"""The harness names generations only through the reference's profile table.

What a generation does differently is stated once, as a flag of its ``Profile``
(``reference_impl/generation.py``, the spec's Generations table). The harness's behavioural
rules about generations, the safety monitor's waivers and the invariants exploration expects
a generation to break, read those flags; they never compare a generation's name.
"""

from __future__ import annotations

import ast
from pathlib import Path

from conformance.judging.safety import PROPERTIES, SafetyMonitor
from conformance.search.explore import EXPECTED_VIOLATIONS
from reference_impl import Config, Generation
from reference_impl.generation import PROFILES, breaks_invariants

HOME = Path(__file__).resolve().parents[1]
BEHAVIOURAL = ("conformance/judging/safety.py", "conformance/search/explore.py")
NAMES = {g.value for g in Generation} | {g.name for g in Generation}


def generation_names_used(path: Path) -> list[str]:
    """Generation names in comparisons or as ``Generation.X``, with their line."""
    out = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Compare):
            for part in [node.left, *node.comparators]:
                if isinstance(part, ast.Constant) and part.value in NAMES:
                    out.append(f"{path.name}:{node.lineno}: {part.value}")
        elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "Generation":
            out.extend([f"{path.name}:{node.lineno}: Generation.{node.attr}"] if node.attr in NAMES else [])
    return out


def test_behavioural_harness_code_reads_flags_not_names() -> None:
    for rel in BEHAVIOURAL:
        assert generation_names_used(HOME / rel) == [], rel


def test_the_name_finder_finds_a_comparison(tmp_path: Path) -> None:
    probe = tmp_path / "probe.py"
    probe.write_text('x = 1\nif x == "hw-truncation":\n    y = Generation.LEADER_EPOCH\n', encoding="utf-8")
    assert generation_names_used(probe) == ["probe.py:2: hw-truncation", "probe.py:3: Generation.LEADER_EPOCH"]


def test_expected_violations_are_the_profiles() -> None:
    for generation, profile in PROFILES.items():
        assert EXPECTED_VIOLATIONS.get(generation, frozenset()) == breaks_invariants(profile)
    assert {Generation.HW_TRUNCATION: frozenset({"StrongIsr", "AckedNotLost"})} == EXPECTED_VIOLATIONS


def test_safety_waivers_and_applicability_follow_the_flags() -> None:
    for generation, profile in PROFILES.items():
        monitor = SafetyMonitor(Config(generation=generation))
        assert monitor.truncates_to_hw is profile.truncates_to_hw_on_follow
        applies = generation.value in PROPERTIES["SAFE-EPOCH-CACHE"].generations
        assert applies is profile.keeps_epoch_cache, generation
