"""Loading fixtures: YAML (safe loading only) checked against ``spec/fixture.schema.json``.

Every problem is reported as ``file:line: field: message`` and all problems of a file
are collected, never a traceback: a fixture author fixes them in one pass. Line
numbers come from the YAML node marks (``yaml.compose``), so an error deep inside a
step points at the line of that field. A text already found to fit the schema in an
earlier run is not checked against it again (``validated.py``).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from reference_impl import (
    Config,
    ConfigError,
    Generation,
    InitialStateError,
    State,
    Step,
    StepFormatError,
    config_from_dict,
    initial_state,
    step_from_dict,
)
from reference_impl.given import normalise

from . import validated
from .fixture_format import (
    CURRENT_FORMAT,
    HISTORY,
    OLDEST_FORMAT,
    MigrationError,
    ambiguous_under_current,
    migrate_from_1,
    needs_proposal_check,
)
from .schemas import fixture_fast_path, schema, validator

if TYPE_CHECKING:
    import jsonschema

PathKey = tuple[str | int, ...]

# Safe loading only; libyaml's C parser when PyYAML has it (several times faster).
_SafeLoader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


@dataclass(frozen=True)
class Problem:
    """One thing wrong with a fixture file, located to a line and a field."""

    file: str
    line: int
    field: str
    message: str

    def __str__(self) -> str:
        where = f"{self.file}:{self.line}" if self.line else self.file
        return f"{where}: {self.field}: {self.message}"


class FixtureError(Exception):
    """One or more fixture files are invalid; ``problems`` lists every problem."""

    def __init__(self, problems: list[Problem]) -> None:
        super().__init__("\n".join(str(p) for p in problems))
        self.problems = problems


@dataclass(frozen=True)
class FixtureStep:
    index: int
    """Position in the fixture's ``steps`` list, from 0 (``steps[index]`` in field paths)."""
    step: Step
    do: dict[str, Any]
    expect: dict[str, Any] | None
    expect_rejected: str | None
    why: str | None
    source: str | None
    line: int
    logs_match: tuple[str, ...] = ()
    """Replicas whose logs must be equal after the step (their records not spelled out)."""

    @property
    def number(self) -> int:
        """The step's number in reports, from 1: "step 3" is the third step."""
        return self.index + 1


@dataclass(frozen=True)
class Fixture:
    """One runnable case: a fixture file's steps under one generation."""

    id: str
    base_id: str
    title: str
    source: str
    description: str
    tags: tuple[str, ...]
    rules: tuple[str, ...]
    generation: Generation
    config: Config
    steps: tuple[FixtureStep, ...]
    path: str
    line: int = 1
    group: str = field(default="")
    """The folder under fixtures/ the file lives in (``seeds``, ``kafka``, ...)."""
    initial: dict[str, Any] | None = None
    """The state to start from (the ``initial:`` block with every default spelled out for
    this generation, ``reference_impl.given.normalise``); None for a fresh topic."""

    def start(self) -> State:
        """The reference's state before the first step."""
        return initial_state(self.config, self.initial)


def field_path(path: Iterable[str | int]) -> str:
    """``("steps", 3, "do", "replica")`` -> ``steps[3].do.replica``."""
    out = ""
    for part in path:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += ("." if out else "") + str(part)
    return out or "(document)"


def line_map(node: yaml.Node, path: PathKey, lines: dict[PathKey, int], dupes: list[tuple[PathKey, int]]) -> None:
    """Record the 1-based line of every node by its path; note duplicate mapping keys."""
    lines[path] = node.start_mark.line + 1
    if isinstance(node, yaml.MappingNode):
        seen: set[str] = set()
        for key_node, value_node in node.value:
            key = key_node.value
            if key in seen:
                dupes.append(((*path, key), key_node.start_mark.line + 1))
            seen.add(key)
            line_map(value_node, (*path, key), lines, dupes)
            # a field's line is its key's line (a nested value may start lower down)
            lines[(*path, key)] = key_node.start_mark.line + 1
    elif isinstance(node, yaml.SequenceNode):
        for i, item in enumerate(node.value):
            line_map(item, (*path, i), lines, dupes)


def line_for(lines: Mapping[PathKey, int], path: PathKey) -> int:
    while path and path not in lines:
        path = path[:-1]
    return lines.get(path, 1)


def fixture_schema() -> dict[str, Any]:
    return schema("fixture")


def _validator() -> jsonschema.Draft202012Validator:
    # The fixture schema takes a step and an observation from spec/definitions.schema.json;
    # schemas.validator resolves such references across files.
    return validator("fixture")


_FITTING_ACTIONS: set[str] = set()
"""Steps' ``do`` (as canonical JSON) already found to fit their kind's schema: fixtures
repeat the same few actions (``fetch B``) many times."""


def _fits_fast(doc: Any) -> bool:
    """True only if ``doc`` fits the fixture schema, checked the fast way
    (``schemas.fixture_fast_path``: each step's ``do`` against its own kind's rules)."""
    fast = fixture_fast_path()
    if fast is None:
        return False
    outline, per_kind = fast
    if not outline.is_valid(doc):
        return False
    for step in doc.get("steps") or ():
        do = step.get("do") if isinstance(step, dict) else None
        if not isinstance(do, dict) or not all(isinstance(key, str) for key in do):
            return False
        kind = do.get("kind")
        check = per_kind.get(kind) if isinstance(kind, str) else None
        if check is None:
            return False
        try:
            text = json.dumps(do, sort_keys=True)
        except (TypeError, ValueError):  # not JSON data (a YAML date, say): no shortcut
            return False
        if text in _FITTING_ACTIONS:
            continue
        if not check.is_valid(do):
            return False
        if len(_FITTING_ACTIONS) > 10_000:
            _FITTING_ACTIONS.clear()
        _FITTING_ACTIONS.add(text)
    return True


def _schema_problems(doc: Any, lines: Mapping[PathKey, int], file: str) -> list[Problem]:
    if _fits_fast(doc):  # the common case; otherwise the full schema names every problem
        return []
    validator = _validator()
    problems = []
    for error in validator.iter_errors(doc):
        # if/then failures nest the real reason one level down: report the leaves.
        leaves = list(_leaf_errors(error))
        for leaf in leaves:
            path = tuple(leaf.absolute_path)
            problems.append(Problem(file, line_for(lines, path), field_path(path), _message(leaf)))
    problems.sort(key=lambda p: (p.line, p.field))
    unique: list[Problem] = []
    for p in problems:
        if p not in unique:
            unique.append(p)
    return unique


def _leaf_errors(error: jsonschema.ValidationError) -> Iterator[jsonschema.ValidationError]:
    if error.context:
        for sub in error.context:
            yield from _leaf_errors(sub)
    else:
        yield error


def _message(error: jsonschema.ValidationError) -> str:
    if error.validator == "additionalProperties":
        return error.message.replace("Additional properties are not allowed", "unknown field")
    if error.validator == "required":
        return error.message.replace("is a required property", "is required")
    return error.message


def load_fixture_file(path: Path) -> list[Fixture]:
    """Load one YAML fixture file into one ``Fixture`` per generation it runs under.

    Raises ``FixtureError`` with every problem found in the file.
    """
    file = str(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise FixtureError([Problem(file, 0, "(file)", f"cannot read: {exc.strerror or exc}")]) from None
    except UnicodeDecodeError as exc:
        raise FixtureError([Problem(file, 0, "(file)", f"not UTF-8 text: {exc.reason}")]) from None
    loader = _SafeLoader(text)
    try:
        node = loader.get_single_node()  # parse once: the nodes give the line numbers ...
        doc = loader.construct_document(node) if node is not None else None  # ... and the data
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark is not None else 1
        raise FixtureError([Problem(file, line, "(yaml)", str(exc.problem or exc))]) from None
    except yaml.YAMLError as exc:
        raise FixtureError([Problem(file, 1, "(yaml)", str(exc))]) from None
    finally:
        loader.dispose()
    if node is None:
        raise FixtureError([Problem(file, 1, "(document)", "the file is empty")])
    lines: dict[PathKey, int] = {}
    dupes: list[tuple[PathKey, int]] = []
    line_map(node, (), lines, dupes)
    problems = [Problem(file, line, field_path(p), "duplicate key (YAML keeps only the last)") for p, line in dupes]
    newer = _newer_format(doc, lines, file)
    if newer is not None:  # written for a kconform that knows more: its fields cannot be judged here
        raise FixtureError([newer])
    if not validated.fits(text):  # the schema's verdict on this very text, from an earlier run
        schema_problems = _schema_problems(doc, lines, file)
        if not schema_problems:
            validated.remember(text)
        problems += schema_problems
    if problems:
        raise FixtureError(problems)
    if not isinstance(doc, dict):  # the schema reports this too; kept for the type checker
        raise FixtureError([Problem(file, 1, "(document)", "a fixture file must be a mapping")])
    return _build(doc, lines, path)


def _newer_format(doc: Any, lines: Mapping[PathKey, int], file: str) -> Problem | None:
    """The problem of a fixture whose ``format:`` is newer than this loader reads."""
    version = doc.get("format") if isinstance(doc, dict) else None
    if isinstance(version, int) and not isinstance(version, bool) and version > CURRENT_FORMAT:
        return Problem(
            file,
            line_for(lines, ("format",)),
            "format",
            f"format {version} is newer than this kconform reads (formats {OLDEST_FORMAT} to {CURRENT_FORMAT}): "
            "upgrade kconform to run this fixture",
        )
    return None


def _deep_merge(base: Mapping[str, Any], extra: Mapping[str, Any]) -> dict[str, Any]:
    """``base`` with ``extra``'s fields added, mappings merged key by key (the way ``expect``
    is compared); the caller has checked that no field is in both (``_overlaps``)."""
    out = dict(base)
    for key, value in extra.items():
        if key in out and isinstance(out[key], dict) and isinstance(value, dict):
            out[key] = _deep_merge(out[key], value)
        else:
            out[key] = value
    return out


def _overlaps(base: Any, extra: Any, path: PathKey = ()) -> Iterator[PathKey]:
    """The paths of ``extra`` that ``base`` states too (a value, or a list, in both)."""
    if not isinstance(base, dict) or not isinstance(extra, dict):
        yield path
        return
    for key, value in extra.items():
        if key in base:
            yield from _overlaps(base[key], value, (*path, key))


def _generation_problems(
    raw_steps: list[Any], generations: list[str], lines: Mapping[PathKey, int], file: str
) -> list[Problem]:
    """``only`` and ``expect_under`` name generations the fixture runs under, a step's
    ``expect_under`` only those it runs under, and no field is stated twice."""
    problems: list[Problem] = []
    listed = f"(this fixture runs under {', '.join(generations)})"
    for i, raw in enumerate(raw_steps):
        only = raw.get("only")
        for j, gen in enumerate(only or ()):
            if gen not in generations:
                key: PathKey = ("steps", i, "only", j)
                problems.append(Problem(file, line_for(lines, key), field_path(key), f"{gen} is not run {listed}"))
        for gen, extra in (raw.get("expect_under") or {}).items():
            key = ("steps", i, "expect_under", gen)
            if gen not in generations:
                problems.append(Problem(file, line_for(lines, key), field_path(key), f"{gen} is not run {listed}"))
            elif only is not None and gen not in only:
                message = f"the step does not run under {gen} (only: {', '.join(only)})"
                problems.append(Problem(file, line_for(lines, key), field_path(key), message))
            for twice in _overlaps(raw.get("expect") or {}, extra):
                where = (*key, *twice)
                message = "also stated in expect: state a field in expect (every generation) or here, not both"
                problems.append(Problem(file, line_for(lines, where), field_path(where), message))
    return problems


def _build(doc: dict[str, Any], lines: Mapping[PathKey, int], path: Path) -> list[Fixture]:
    file = str(path)
    problems: list[Problem] = []
    config_data = dict(doc.get("config") or {})
    generations = doc.get("generations") or [config_data.get("generation", Generation.LEADER_EPOCH.value)]
    if "generations" in doc and "generation" in config_data:
        problems.append(
            Problem(
                file,
                line_for(lines, ("config", "generation")),
                "config.generation",
                "give either config.generation or generations, not both",
            )
        )
    configs: dict[str, Config] = {}
    for gen in generations:
        try:
            configs[gen] = config_from_dict({**config_data, "generation": gen})
        except ConfigError as exc:
            key: PathKey = ("config", exc.field)
            problems.append(Problem(file, line_for(lines, key), field_path(key), exc.message))
            break
    replicas = next(iter(configs.values())).replicas if configs else ()
    initials: dict[str, dict[str, Any] | None] = dict.fromkeys(configs)
    if "initial" in doc:
        for gen, config in configs.items():
            try:
                initials[gen] = normalise(config, doc["initial"])
                initial_state(config, initials[gen])
            except InitialStateError as exc:
                key = ("initial", *_field_keys(exc.field))
                under = f" (under {gen})" if len(generations) > 1 else ""
                problems.append(Problem(file, line_for(lines, key), field_path(key), exc.message + under))
                break
    problems += _generation_problems(doc["steps"], list(generations), lines, file)
    steps: list[FixtureStep] = []
    entries: list[Mapping[str, Any]] = []  # the file's step entry behind each of ``steps``
    for i, raw in enumerate(doc["steps"]):
        try:
            step = step_from_dict(raw["do"])
        except StepFormatError as exc:
            key = ("steps", i, "do", exc.field)
            problems.append(Problem(file, line_for(lines, key), field_path(key), exc.message))
            continue
        for key, name in _replica_names(i, raw):
            if replicas and name not in replicas:
                problems.append(
                    Problem(
                        file,
                        line_for(lines, key),
                        field_path(key),
                        f"unknown replica {name!r} (config.replicas: {list(replicas)})",
                    )
                )
        expect = raw.get("expect")
        steps.append(
            FixtureStep(
                index=i,
                step=step,
                do=dict(raw["do"]),
                expect=expect,
                expect_rejected=raw.get("expect_rejected"),
                why=raw.get("why"),
                source=raw.get("source"),
                line=line_for(lines, ("steps", i)),
                logs_match=tuple(raw.get("logs_match") or ()),
            )
        )
        entries.append(raw)
    if problems:
        raise FixtureError(problems)
    version = doc.get("format", CURRENT_FORMAT)
    cases = {gen: _case_steps(steps, entries, gen) for gen in generations}
    for gen, case in cases.items():
        if not case:
            problems.append(Problem(file, line_for(lines, ("steps",)), "steps", f"no step runs under {gen} (only:)"))
            continue
        if not needs_proposal_check(Generation(gen)):
            continue
        start = initial_state(configs[gen], initials[gen])
        if version == 1:
            try:
                cases[gen] = migrate_from_1(case, start)
            except MigrationError as exc:
                problems.append(Problem(file, case[exc.index].line, "format", exc.message))
        elif (
            "format" not in doc
            and "initial" not in doc  # given states reached the main line with AlterPartition (31be373)
            and not any(fs.step.kind == "deliver_alter_partition" for fs in case)
        ):
            at = ambiguous_under_current(case, start)
            if at is not None:
                problems.append(Problem(file, line_for(lines, ("id",)), "format", _ambiguous(case[at])))
    if problems:
        raise FixtureError(problems)
    multi = len(generations) > 1
    return [
        Fixture(
            id=f"{doc['id']}/{gen}" if multi else doc["id"],
            base_id=doc["id"],
            title=doc["title"],
            source=doc["source"],
            description=doc.get("description", ""),
            tags=tuple(doc.get("tags") or ()),
            rules=tuple(doc.get("rules") or ()),
            generation=Generation(gen),
            config=configs[gen],
            steps=tuple(cases[gen]),
            path=file,
            group=path.parent.name,
            initial=initials[gen],
        )
        for gen in generations
    ]


def _case_steps(steps: list[FixtureStep], entries: list[Mapping[str, Any]], gen: str) -> list[FixtureStep]:
    """The steps one generation runs: those whose ``only`` admits it, each with its
    ``expect_under`` for that generation merged into ``expect``, numbered within the case
    (reports count a case's own steps; each keeps its line in the file)."""
    out: list[FixtureStep] = []
    for fs, raw in zip(steps, entries, strict=True):
        only = raw.get("only")
        if only is not None and gen not in only:
            continue
        extra = (raw.get("expect_under") or {}).get(gen)
        expect = fs.expect if extra is None else _deep_merge(fs.expect or {}, extra)
        if len(out) != fs.index or expect is not fs.expect:
            fs = replace(fs, index=len(out), expect=expect)
        out.append(fs)
    return out


def _ambiguous(fs: FixtureStep) -> str:
    return (
        f"under diverging-epoch the leader proposes an ISR change at step {fs.number} (line {fs.line}, "
        f"{fs.step.kind}) that no step delivers. Until format 2 ({HISTORY[2].split(';')[0]}) such a change was "
        "committed at once. Say which this fixture means: format: 1 (kconform inserts the deliver_alter_partition "
        "steps) or format: 2 (the proposal stays in flight)"
    )


def _field_keys(dotted: str) -> PathKey:
    """``replicas.B.log[2]`` -> ``("replicas", "B", "log", 2)`` (an ``InitialStateError`` field)."""
    keys: list[str | int] = []
    for part in dotted.split("."):
        name, _, rest = part.partition("[")
        if name and name != "(initial)":
            keys.append(name)
        for index in rest.replace("]", "[").split("["):
            if index.isdigit():
                keys.append(int(index))
    return tuple(keys)


def _replica_names(i: int, raw: Mapping[str, Any]) -> Iterator[tuple[PathKey, str]]:
    """Every replica id a step names, with its path: in ``do``, ``expect`` and ``logs_match``."""
    do = raw["do"]
    for j, name in enumerate(raw.get("logs_match") or ()):
        yield ("steps", i, "logs_match", j), name
    for name_field in ("replica", "to", "leader"):
        if do.get(name_field) is not None:
            yield ("steps", i, "do", name_field), do[name_field]
    for j, name in enumerate(do.get("notify") or ()):
        yield ("steps", i, "do", "notify", j), name
    stated: list[tuple[PathKey, Mapping[str, Any]]] = [(("steps", i, "expect"), raw.get("expect") or {})]
    stated += [(("steps", i, "expect_under", gen), e) for gen, e in (raw.get("expect_under") or {}).items()]
    for at, expect in stated:
        for j, name in enumerate(expect.get("isr") or ()):
            yield (*at, "isr", j), name
        for name, fields_ in (expect.get("replicas") or {}).items():
            yield (*at, "replicas", name), name
            for other in fields_.get("remote_leo") or {}:
                yield (*at, "replicas", name, "remote_leo", other), other


def _as_paths(paths: str | os.PathLike[str] | Iterable[str | os.PathLike[str]]) -> list[Path]:
    """One path (``str`` or ``Path``) or many, as ``Path`` objects: a bare string is one
    path, never iterated letter by letter."""
    if isinstance(paths, str | os.PathLike):
        return [Path(paths)]
    return [Path(p) for p in paths]


def fixture_files(paths: str | os.PathLike[str] | Iterable[str | os.PathLike[str]]) -> list[Path]:
    """YAML files named by ``paths`` (files, or folders searched recursively), sorted; a
    file named twice (a folder and a file inside it) is listed once."""
    out: list[Path] = []
    seen: set[Path] = set()
    for p in _as_paths(paths):
        found = sorted(q for q in p.rglob("*") if q.suffix in (".yaml", ".yml") and q.is_file()) if p.is_dir() else [p]
        for q in found:
            key = q.resolve()
            if key not in seen:
                seen.add(key)
                out.append(q)
    return out


def load_fixtures(
    paths: str | os.PathLike[str] | Iterable[str | os.PathLike[str]],
) -> tuple[list[Fixture], list[Problem]]:
    """Load every fixture under ``paths`` (one path or many, ``str`` or ``Path``); return
    the good ones and all problems.

    Also reports a fixture id used by two files.
    """
    fixtures: list[Fixture] = []
    problems: list[Problem] = []
    seen: dict[str, str] = {}
    for file in fixture_files(paths):
        if not file.exists():
            problems.append(Problem(str(file), 0, "(file)", "no such file or folder"))
            continue
        try:
            loaded = load_fixture_file(file)
        except FixtureError as exc:
            problems += exc.problems
            continue
        base = loaded[0].base_id
        if base in seen:
            problems.append(Problem(str(file), 1, "id", f"id {base!r} is already used by {seen[base]}"))
            continue
        seen[base] = str(file)
        fixtures += loaded
    return fixtures, problems
