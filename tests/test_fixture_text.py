"""Fixture texts shown to users are English; the seeds' Chinese appears only as quotations.

A fixture's ``title``, ``source`` and ``description`` and each step's ``why`` and
``source`` are printed in failure reports, ``kconform list`` and ``kconform explain``.
They must say their point in English; Chinese words of the seed notes are welcome as a
quotation a reader can find in the notes: inside "..." or “...”, or a section heading
inside «...». A failure names every offending field by file and line.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from helpers import bundled

from conformance.fixtures.loading import Fixture, PathKey, field_path, line_for, line_map, load_fixture_file

# CJK radicals, symbols and punctuation, kana, ideographs, compatibility ideographs, fullwidth forms.
_CJK = re.compile("[\u2e80-\u2fdf\u3000-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uff00-\uffef]+")
_QUOTATION = re.compile('"[^"]*"|\u201c[^\u201d]*\u201d|«[^»]*»')

FIXTURE_FIELDS = ("title", "source", "description")
STEP_FIELDS = ("why", "source")


def unquoted_cjk(text: str) -> list[str]:
    """The runs of CJK characters in ``text`` that are not inside a quotation."""
    return _CJK.findall(_QUOTATION.sub(" ", text))


def _texts(fixture: Fixture) -> Iterator[tuple[PathKey, str]]:
    for name in FIXTURE_FIELDS:
        yield (name,), getattr(fixture, name) or ""
    for fs in fixture.steps:
        for name in STEP_FIELDS:
            yield ("steps", fs.index, name), getattr(fs, name) or ""


@functools.cache
def _lines(path: str) -> dict[PathKey, int]:
    node = yaml.compose(Path(path).read_text(encoding="utf-8"), Loader=yaml.SafeLoader)
    lines: dict[PathKey, int] = {}
    line_map(node, (), lines, [])
    return lines


def offences(fixtures: list[Fixture]) -> list[str]:
    """``file:line: field: runs`` for every text with Chinese outside quotations (one per file and field)."""
    out: list[str] = []
    seen: set[tuple[str, PathKey]] = set()
    for fixture in fixtures:  # a file run under several generations is one Fixture per generation
        for key, text in _texts(fixture):
            runs = unquoted_cjk(text)
            if not runs or (fixture.path, key) in seen:
                continue
            seen.add((fixture.path, key))
            out.append(f"{fixture.path}:{line_for(_lines(fixture.path), key)}: {field_path(key)}: {', '.join(runs)}")
    return out


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('B goes down first (seed 001 §3.2: "两者均宕机了", both go down).', []),
        ("A quotes “两者均宕机了” with curly quotes.", []),
        ("003 «Follower故障» 1", []),
        ("两者均宕机了 (B)", ["两者均宕机了"]),
        ('B answers: 会造成数据丢失, and "数据" is quoted', ["会造成数据丢失"]),
        ("fullwidth punctuation counts too：", ["："]),
        ('an unclosed "quote 数据', ["数据"]),
    ],
)
def test_unquoted_cjk(text: str, expected: list[str]) -> None:
    assert unquoted_cjk(text) == expected


def test_offences_point_at_file_line_and_field(tmp_path: Path) -> None:
    path = tmp_path / "mixed.yaml"
    path.write_text(
        "id: mixed\n"
        "title: English title\n"
        'source: "004 «数据丢失现象» table"\n'
        "description: >\n"
        "  One line,\n"
        "  then 初始条件 unquoted.\n"
        "config: {generation: leader-epoch, replicas: [A, B]}\n"
        "steps:\n"
        "  - do: {kind: produce, values: [m0], acks: 1, id: p1}\n"
        "  - do: {kind: crash, replica: A}\n"
        '    why: "两者均宕机了 (A)"\n'
        '    source: "004 table, 初始条件"\n',
        encoding="utf-8",
    )
    found = offences(load_fixture_file(path))
    assert found == [
        f"{path}:4: description: 初始条件",
        f"{path}:11: steps[1].why: 两者均宕机了",
        f"{path}:12: steps[1].source: 初始条件",
    ]


def test_bundled_fixture_texts_are_english() -> None:
    fixtures, problems = bundled()
    assert not problems, "\n".join(str(p) for p in problems)
    found = offences(fixtures)
    assert not found, (
        "Chinese outside a quotation: say it in English and quote the seed's words as "
        '"..." with the seed section:\n' + "\n".join(found)
    )
