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
        got = _json_type(error.instance)
        shown = repr(error.instance)
        return f"{path}: must be {expected}, got {got}" + (f" {shown}" if len(shown) <= 40 else "")
    message = str(error.message)
    return f"{path}: {message if len(message) <= 160 else message[:157] + '...'}"


def _json_type(value: Any) -> str:
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
