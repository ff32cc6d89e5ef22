"""The spec's JSON Schemas, loaded once and resolvable by ``$id`` across files.

Every ``spec/*.schema.json`` is registered, so a schema may ``$ref`` another file's
definitions. ``validator("definitions", "observation")`` validates one definition.
jsonschema is imported here only, on first use: commands that never validate stay fast.
"""

from __future__ import annotations

import functools
import json
from typing import TYPE_CHECKING, Any

from .paths import SCHEMA_DIR

if TYPE_CHECKING:
    import jsonschema


@functools.cache
def schema(name: str) -> dict[str, Any]:
    """``spec/{name}.schema.json`` as data."""
    data: dict[str, Any] = json.loads((SCHEMA_DIR / f"{name}.schema.json").read_text(encoding="utf-8"))
    return data


@functools.cache
def _registry() -> Any:
    from referencing import Registry, Resource

    resources = []
    for path in sorted(SCHEMA_DIR.glob("*.schema.json")):
        data = json.loads(path.read_text(encoding="utf-8"))
        if "$id" in data:
            resources.append((data["$id"], Resource.from_contents(data)))
    return Registry().with_resources(resources)


@functools.cache
def validator(name: str, definition: str | None = None) -> jsonschema.Draft202012Validator:
    """A validator for a whole schema file, or for one of its ``$defs``."""
    import jsonschema

    root = schema(name)
    target: dict[str, Any] = root if definition is None else {"$ref": f"{root['$id']}#/$defs/{definition}"}
    return jsonschema.Draft202012Validator(target, registry=_registry())


def _kind_of(branch: Any) -> str | None:
    """K when ``branch`` is ``{"if": {kind is K}, "then": ...}``, the shape of each step
    kind's branch in the ``action`` definition; else None."""
    if not isinstance(branch, dict) or set(branch) != {"if", "then"}:
        return None
    kind = branch["if"].get("properties", {}).get("kind", {}).get("const") if isinstance(branch["if"], dict) else None
    if not isinstance(kind, str) or branch["if"] != {"properties": {"kind": {"const": kind}}, "required": ["kind"]}:
        return None
    return kind


def _absolute_refs(node: Any, base: str) -> Any:
    """``node`` with its local ``#/...`` references made to point into ``base``."""
    if isinstance(node, dict):
        return {
            k: (base + v if k == "$ref" and isinstance(v, str) and v.startswith("#") else _absolute_refs(v, base))
            for k, v in node.items()
        }
    if isinstance(node, list):
        return [_absolute_refs(v, base) for v in node]
    return node


@functools.cache
def fixture_fast_path() -> tuple[jsonschema.Draft202012Validator, dict[str, jsonschema.Draft202012Validator]] | None:
    """Two checks that together accept exactly what the fixture schema accepts, fast.

    The ``action`` definition is an ``allOf`` of one ``if kind is K then ...`` branch per
    step kind; checking every step's ``do`` against all of them dominates loading the
    fixtures. Here: the fixture schema with any ``do`` allowed (the outline), and one
    validator per step kind holding only that kind's branch. A document fits the fixture
    schema exactly when it fits the outline and each ``do`` fits its kind's validator.
    None when the schemas are not of that shape (then only the full schema is used).
    """
    import copy

    import jsonschema

    root = schema("fixture")
    definitions = schema("definitions")
    action = definitions.get("$defs", {}).get("action")
    outline = copy.deepcopy(root)
    try:
        do = outline["$defs"]["step"]["properties"]["do"]
    except (KeyError, TypeError):
        return None
    if do != {"$ref": f"{definitions['$id'].rsplit('/', 1)[1]}#/$defs/action"} or not isinstance(action, dict):
        return None
    outline["$defs"]["step"]["properties"]["do"] = {}
    base_uri = root["$id"].rsplit("/", 1)[0]
    outline["$id"] = f"{base_uri}/fixture-outline.json"
    shared = [branch for branch in action.get("allOf", []) if _kind_of(branch) is None]
    per_kind: dict[str, jsonschema.Draft202012Validator] = {}
    for branch in action.get("allOf", []):
        kind = _kind_of(branch)
        if kind is None:
            continue
        one = {k: v for k, v in action.items() if k != "allOf"}
        one["allOf"] = [*shared, branch["then"]]
        one = _absolute_refs(one, definitions["$id"])
        one["$id"] = f"{base_uri}/action-{kind}.json"
        per_kind[kind] = jsonschema.Draft202012Validator(one, registry=_registry())
    return jsonschema.Draft202012Validator(outline, registry=_registry()), per_kind


def first_error(instance: Any, name: str, definition: str | None = None, limit: int = 5) -> str | None:
    """What is wrong with ``instance`` against the schema, one ``path: problem`` per
    error (at most ``limit``, most specific first); None when it fits."""
    import jsonschema

    errors = list(validator(name, definition).iter_errors(instance))
    if not errors:
        return None
    leaves = sorted(_leaves(errors), key=lambda e: [str(p) for p in e.absolute_path])
    shown = [_describe(e) for e in leaves[:limit]]
    more = len(leaves) - len(shown)
    del jsonschema
    return "; ".join(shown) + (f"; and {more} more" if more > 0 else "")


def _leaves(errors: list[Any]) -> list[Any]:
    """The most specific errors: the sub-errors of a failed ``oneOf``/``anyOf``, if any."""
    out = []
    for error in errors:
        out += _leaves(list(error.context)) if error.context else [error]
    return out


def _describe(error: Any) -> str:
    path = ".".join(str(p) for p in error.absolute_path) or "(whole)"
    if error.validator == "type":
        expected = error.validator_value
        expected = " or ".join(expected) if isinstance(expected, list) else expected
        got = json_type(error.instance)
        shown = repr(error.instance)
        return f"{path}: must be {expected}, got {got}" + (f" {shown}" if len(shown) <= 40 else "")
    message = str(error.message)
    return f"{path}: {message if len(message) <= 160 else message[:157] + '...'}"


def json_type(value: Any) -> str:
    """The JSON Schema type name of a decoded JSON value (for messages and type checks)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object" if isinstance(value, dict) else type(value).__name__
