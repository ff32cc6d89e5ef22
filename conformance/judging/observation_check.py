"""The observation's shape, checked at every step without jsonschema on the hot path.

``schemas.first_error(obj, "definitions", "observation")`` validates with jsonschema,
which costs about a millisecond per observation: affordable once per run, not after every
step of a million-step fuzz or replay. Checking only the first observation let garbage at
step 2 through (it was judged on its values, e.g. "meets settled"). So the observation
definition of ``spec/definitions.schema.json`` is compiled here, once, into a tree of small
closures, and ``check_observation`` walks an observation with them.

The compiler is not a JSON Schema implementation: it knows the keywords that definition
uses (and a few neighbours: ``required``, ``patternProperties``, ``propertyNames``,
``const``, the numeric and length bounds), with draft 2020-12's meaning, and raises
``SchemaNotCompilable`` on any other keyword, so a schema that grows a keyword fails loudly
here rather than being checked more loosely than jsonschema checks it.
``tests/test_observation_check.py`` holds the compiled check to jsonschema's verdict on
random, mutated and fixture observations.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol

from reference_impl.observe import Amended

from ..fixtures.schemas import json_type, schema

Problem = tuple[list[str], str]
"""Where (path segments, innermost first) and what."""
Check = Callable[[Any], Problem | None]


KeysCheck = Callable[[Any, Sequence[str]], Problem | None]
"""An object check of some keys of a mapping (``_Compiler.keys_check``)."""


class TailCheck(Protocol):
    """An array check that can start at an index (``_Compiler.tail_check``); from 0, a ``Check``."""

    def __call__(self, value: Any, start: int = 0) -> Problem | None: ...


IGNORED = frozenset({"description", "title", "$comment", "examples", "default"})
"""Annotations: no effect on validity."""


class SchemaNotCompilable(ValueError):
    """The schema uses a keyword (or form) this compiler does not know; extend the compiler
    (and its agreement test) rather than checking less than jsonschema does."""


def _shown(value: Any) -> str:
    try:
        text = json.dumps(value)
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


_ARTICLE = {"integer": "an integer", "object": "an object", "array": "an array"}


def _is_type(name: str) -> Callable[[Any], bool]:
    """Draft 2020-12's type predicates (as jsonschema's default type checker: a bool is no
    number, an integer may be a float with no fraction, an array is a list)."""
    if name == "integer":
        return lambda v: (
            type(v) is int
            or ((isinstance(v, int) and not isinstance(v, bool)) or (isinstance(v, float) and v.is_integer()))
        )
    if name == "number":
        return lambda v: isinstance(v, int | float) and not isinstance(v, bool)
    if name == "string":
        return lambda v: isinstance(v, str)
    if name == "boolean":
        return lambda v: isinstance(v, bool)
    if name == "null":
        return lambda v: v is None
    if name == "object":
        return lambda v: isinstance(v, dict)
    if name == "array":
        return lambda v: isinstance(v, list)
    raise SchemaNotCompilable(f"unknown type {name!r}")


def _equal(a: Any, b: Any) -> bool:
    """JSON equality, as jsonschema's ``enum``/``const``: true and 1 differ."""
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_equal(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_equal(a[k], b[k]) for k in a)
    return bool(a == b) and (json_type(a) == json_type(b) or {json_type(a), json_type(b)} <= {"number"})


_CONTAINER_KEYWORDS = frozenset(
    {
        "properties",
        "additionalProperties",
        "patternProperties",
        "propertyNames",
        "required",
        "items",
        "minItems",
        "maxItems",
        "uniqueItems",
    }
)
"""Keywords of a node that checks an object or an array: what a shared check remembers."""

MEMO_SIZE = 256
"""Objects and arrays a shared check remembers per schema node before it forgets them all
(a step's observation has a few per node: one per replica, one log each)."""


def _remembering(check: Check, tail: TailCheck | None = None, keyed: KeysCheck | None = None) -> Check:
    """``check`` that passes at once an object it passed before (the same object, held here
    so its identity cannot be reused): for observations that are never changed once made
    (``check_shared_observation``), an unchanged part of a step's observation is the
    previous step's object and need not be walked again.

    ``tail`` (an array node): a list that says its first ``kept`` items are those of a list
    this check passed (``base``: a log the reference's ``Observer`` or a stdio delta made
    from the previous observation's log, ``reference_impl.observe.LogRecords``,
    ``adapters.deltas.Grown``) is checked from ``kept`` on only, so a growing log costs
    what was appended, not its length. ``keyed`` (an object node): an ``Amended`` mapping
    made from one this check passed (the produce outcomes of a long run) is checked on its
    changed keys only (and, should one fail, whole, for the whole check's message)."""
    passed: dict[int, Any] = {}
    absent = object()  # what ``passed`` gives for an object it does not hold (never a value)

    def remembered(value: Any) -> Problem | None:
        if passed.get(id(value), absent) is value:
            return None
        kind = type(value)
        if tail is not None and kind is not list and kind is not dict:
            base = getattr(value, "base", None)
            if base is not None and passed.get(id(base), absent) is base:
                problem = tail(value, value.kept)
            else:
                problem = check(value)
        elif keyed is not None and kind is Amended:
            base = value.made_from  # the base itself, or an amended base's token (held in ``passed``)
            known = passed.get(id(base), absent) is base
            problem = keyed(value, value.changed) if known else check(value)
        else:
            problem = check(value)
        if problem is None and isinstance(value, dict | list):
            if len(passed) >= MEMO_SIZE:
                passed.clear()
            passed[id(value)] = value
            if type(value) is Amended:
                passed[id(value.token)] = value.token  # what a mapping amended from this one names
        return problem

    return remembered


_TAIL_KEYWORDS = frozenset({"type", "items", "minItems", "maxItems"})
"""An array node with only these (and annotations) can be checked from an index on."""
_KEYED_KEYWORDS = frozenset({"type", "properties", "additionalProperties", "patternProperties", "required"})
"""An object node with only these (and annotations) can be checked on some keys."""


class _Compiler:
    """Compiles one schema node at a time, resolving ``#/$defs/...`` in ``root``. With
    ``remember``, object and array checks pass an object they passed before at once
    (``_remembering``): only for values nobody changes after they are checked."""

    def __init__(self, root: Mapping[str, Any], remember: bool = False) -> None:
        self.root = root
        self.refs: dict[str, Check] = {}
        self.remember = remember

    def ref(self, target: str) -> Check:
        if not target.startswith("#/"):
            raise SchemaNotCompilable(f"only local references are compiled, got {target!r}")
        if target not in self.refs:
            node: Any = self.root
            for part in target[2:].split("/"):
                node = node[part]
            self.refs[target] = self.compile(node)
        return self.refs[target]

    def compile(self, node: Any) -> Check:
        if node is True or node == {}:
            return lambda v: None
        if node is False:
            return lambda v: ([], "no value is allowed here")
        if not isinstance(node, Mapping):
            raise SchemaNotCompilable(f"a schema must be an object or a boolean, got {node!r}")
        checks: list[Check] = []
        known = IGNORED | {
            "$ref", "type", "enum", "const", "properties", "additionalProperties", "patternProperties",
            "propertyNames", "required", "items", "minItems", "maxItems", "uniqueItems", "minimum",
            "maximum", "exclusiveMinimum", "exclusiveMaximum", "minLength", "maxLength", "pattern",
        }  # fmt: skip
        unknown = sorted(set(node) - known)
        if unknown:
            raise SchemaNotCompilable(f"keyword {unknown[0]!r} is not compiled (extend observation_check.py)")
        if "$ref" in node:
            checks.append(self.ref(node["$ref"]))
        if "type" in node:
            checks.append(self.type_check(node["type"]))
        if "enum" in node:
            checks.append(self.enum_check(node["enum"]))
        if "const" in node:
            checks.append(self.enum_check([node["const"]]))
        if any(k in node for k in ("properties", "additionalProperties", "patternProperties", "propertyNames")):
            checks.append(self.object_check(node))
        if "required" in node:
            checks.append(self.required_check(node["required"]))
        if any(k in node for k in ("items", "minItems", "maxItems", "uniqueItems")):
            checks.append(self.array_check(node))
        if any(k in node for k in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum")):
            checks.append(self.number_check(node))
        if any(k in node for k in ("minLength", "maxLength", "pattern")):
            checks.append(self.string_check(node))
        if len(checks) == 1:
            whole = checks[0]
        else:

            def all_of(value: Any) -> Problem | None:
                for check in checks:
                    problem = check(value)
                    if problem is not None:
                        return problem
                return None

            whole = all_of
        if self.remember and not _CONTAINER_KEYWORDS.isdisjoint(node):
            # a whole object or array node passed at once
            return _remembering(whole, self.tail_check(node), self.keys_check(node, whole))
        return whole

    def keys_check(self, node: Mapping[str, Any], whole: Check) -> KeysCheck | None:
        """For an object node of ``_KEYED_KEYWORDS`` only: its check of a mapping whose
        entries but ``keys`` are known to pass (``_remembering``): those entries, the
        required fields; any problem is found again by ``whole`` (the same message as
        checking it whole would give). None for any other node."""
        if not set(node) - IGNORED <= _KEYED_KEYWORDS:
            return None
        typed = self.type_check(node["type"]) if "type" in node else None
        required = self.required_check(node["required"]) if "required" in node else None
        entries = self.object_check(node)

        def keyed(value: Any, keys: Sequence[str]) -> Problem | None:
            if (typed is not None and typed(value) is not None) or (required is not None and required(value)):
                return whole(value)
            if entries({key: value[key] for key in keys if key in value}) is not None:
                return whole(value)
            return None

        return keyed

    def tail_check(self, node: Mapping[str, Any]) -> TailCheck | None:
        """For an array node of ``_TAIL_KEYWORDS`` only: its check of a list whose items
        before ``start`` are known to pass (``_remembering``); None for any other node."""
        if "items" not in node or not set(node) - IGNORED <= _TAIL_KEYWORDS:
            return None
        typed = self.type_check(node["type"]) if "type" in node else None
        array = self.array_check(node)

        def tail(value: Any, start: int = 0) -> Problem | None:
            problem = typed(value) if typed is not None else None
            return problem if problem is not None else array(value, start)

        return tail

    def type_check(self, spec: str | Sequence[str]) -> Check:
        names = [spec] if isinstance(spec, str) else list(spec)
        tests = [_is_type(n) for n in names]
        expected = " or ".join(_ARTICLE.get(n, f"a {n}" if n != "null" else "null") for n in names)

        def check(value: Any) -> Problem | None:
            for test in tests:
                if test(value):
                    return None
            return [], f"expected {expected}, got {json_type(value)} {_shown(value)}"

        return check

    def enum_check(self, options: Sequence[Any]) -> Check:
        hashable = all(isinstance(o, str) for o in options)
        allowed = frozenset(options) if hashable else frozenset()
        shown = ", ".join(_shown(o) for o in options)

        def check(value: Any) -> Problem | None:
            if hashable:
                if isinstance(value, str) and value in allowed:
                    return None
            elif any(_equal(value, o) for o in options):
                return None
            return [], f"{_shown(value)} is not one of {shown}"

        return check

    def object_check(self, node: Mapping[str, Any]) -> Check:
        props = {k: self.compile(v) for k, v in node.get("properties", {}).items()}
        patterns = [(re.compile(p), self.compile(v)) for p, v in node.get("patternProperties", {}).items()]
        extra_node = node.get("additionalProperties", True)
        closed = extra_node is False
        extra = None if extra_node is True or closed else self.compile(extra_node)
        names = self.compile(node["propertyNames"]) if "propertyNames" in node else None
        allowed = ", ".join(sorted(props))

        if names is None and not patterns:
            # the shape of every object in the observation definition: one lookup per key
            def plain(value: Any) -> Problem | None:
                if not isinstance(value, dict):
                    return None
                for key, item in value.items():
                    sub = props.get(key)
                    if sub is None:
                        if closed:
                            return [str(key)], f"unknown field (allowed: {allowed})" if allowed else "unknown field"
                        sub = extra
                        if sub is None:
                            continue
                    problem = sub(item)
                    if problem is not None:
                        problem[0].append(str(key))
                        return problem
                return None

            return plain

        def check(value: Any) -> Problem | None:
            if not isinstance(value, dict):
                return None
            for key, item in value.items():
                if names is not None:
                    problem = names(key)
                    if problem is not None:
                        return [str(key)], f"bad property name: {problem[1]}"
                matched = False
                sub = props.get(key)
                if sub is not None:
                    matched = True
                    problem = sub(item)
                    if problem is not None:
                        problem[0].append(str(key))
                        return problem
                for pattern, pattern_check in patterns:
                    if isinstance(key, str) and pattern.search(key):
                        matched = True
                        problem = pattern_check(item)
                        if problem is not None:
                            problem[0].append(str(key))
                            return problem
                if matched:
                    continue
                if closed:
                    return [str(key)], f"unknown field (allowed: {allowed})" if allowed else "unknown field"
                if extra is not None:
                    problem = extra(item)
                    if problem is not None:
                        problem[0].append(str(key))
                        return problem
            return None

        return check

    def required_check(self, required: Sequence[str]) -> Check:
        def check(value: Any) -> Problem | None:
            if isinstance(value, dict):
                for name in required:
                    if name not in value:
                        return [], f"required field {name!r} is missing"
            return None

        return check

    def array_check(self, node: Mapping[str, Any]) -> TailCheck:
        """The check of an array node, which also takes the index its items are checked
        from (``tail_check``; the count is still the whole list's)."""
        items = self.compile(node["items"]) if "items" in node else None
        low, high = node.get("minItems", 0), node.get("maxItems")
        unique = node.get("uniqueItems", False)

        def check(value: Any, start: int = 0) -> Problem | None:
            if not isinstance(value, list):
                return None
            if len(value) < low:
                return [], f"expected at least {low} items, got {len(value)}"
            if high is not None and len(value) > high:
                return [], f"expected at most {high} items, got {len(value)}"
            if unique:
                for i, item in enumerate(value):
                    if any(_equal(item, other) for other in value[:i]):
                        return [str(i)], f"duplicate item {_shown(item)}"
            if items is not None:
                for i in range(start, len(value)):
                    problem = items(value[i])
                    if problem is not None:
                        problem[0].append(str(i))
                        return problem
            return None

        return check

    def number_check(self, node: Mapping[str, Any]) -> Check:
        low, high = node.get("minimum"), node.get("maximum")
        xlow, xhigh = node.get("exclusiveMinimum"), node.get("exclusiveMaximum")

        def check(value: Any) -> Problem | None:
            if isinstance(value, bool) or not isinstance(value, int | float):
                return None
            if low is not None and value < low:
                return [], f"{_shown(value)} is below the minimum {low}"
            if high is not None and value > high:
                return [], f"{_shown(value)} is above the maximum {high}"
            if xlow is not None and value <= xlow:
                return [], f"{_shown(value)} is not above {xlow}"
            if xhigh is not None and value >= xhigh:
                return [], f"{_shown(value)} is not below {xhigh}"
            return None

        return check

    def string_check(self, node: Mapping[str, Any]) -> Check:
        low, high = node.get("minLength", 0), node.get("maxLength")
        pattern = re.compile(node["pattern"]) if "pattern" in node else None

        def check(value: Any) -> Problem | None:
            if not isinstance(value, str):
                return None
            if len(value) < low:
                return [], f"expected at least {low} characters, got {_shown(value)}"
            if high is not None and len(value) > high:
                return [], f"expected at most {high} characters, got {_shown(value)}"
            if pattern is not None and not pattern.search(value):
                return [], f"{_shown(value)} does not match {pattern.pattern!r}"
            return None

        return check


def compile_definition(root: Mapping[str, Any], definition: str, remember: bool = False) -> Callable[[Any], str | None]:
    """The check of ``root``'s ``$defs/definition``: the first problem as ``path: message``
    (``remember``: see ``_Compiler``)."""
    check = _Compiler(root, remember).ref(f"#/$defs/{definition}")

    def first_problem(value: Any) -> str | None:
        problem = check(value)
        if problem is None:
            return None
        path, message = problem
        return f"{'.'.join(reversed(path)) or '(whole)'}: {message}"

    return first_problem


@functools.cache
def _observation_check(remember: bool = False) -> Callable[[Any], str | None]:
    return compile_definition(schema("definitions"), "observation", remember)


def check_observation(observation: Any) -> str | None:
    """The first problem of ``observation``'s shape against the spec's observation
    definition, as ``path: message`` (``replicas.B.hw: expected an integer, got string "x"``);
    None when it fits. Agrees with ``schemas.first_error(observation, "definitions",
    "observation") is None`` (tests/test_observation_check.py)."""
    return _observation_check()(observation)


def check_shared_observation(observation: Any) -> str | None:
    """``check_observation`` for observations whose parts are never changed once made (an
    adapter's ``shares_observations`` promise; every stdio observation, which kconform
    builds from the reply): an object or array that passed before is passed at once, so a
    step's check walks only what the step changed. The same verdict and message as
    ``check_observation`` for such observations (tests/test_observation_check.py)."""
    return _observation_check(True)(observation)
