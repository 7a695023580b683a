"""Validation of loaded config data against ``schemas/kinrun.schema.json``.

The schema file is the single source of truth for the config format; it ships inside the
package ``kinrun.schemas`` and is read with ``importlib.resources``. :func:`validate` runs a
draft 2020-12 validator, collects *every* error, and turns each into a ConfigError located
through the loader's marks (``error.absolute_path`` -> key path -> line/column). Messages are
reworded where jsonschema's are unhelpful (unknown keys, oneOf, patterns with an
``x-kinrun-message`` annotation in the schema).
"""

from __future__ import annotations

import difflib
import functools
import importlib.resources
import json
import math
import re
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from kinrun.config.loader import LoadedYaml, PathKey, format_path
from kinrun.durations import parse_duration
from kinrun.errors import ConfigError

if TYPE_CHECKING:  # imported by _validator(): readers of the defaults (the library) skip it
    import jsonschema

SCHEMA_PACKAGE = "kinrun.schemas"
SCHEMA_FILE = "kinrun.schema.json"


def schema_text() -> str:
    """The schema file's text, exactly as shipped."""
    return importlib.resources.files(SCHEMA_PACKAGE).joinpath(SCHEMA_FILE).read_text("utf-8")


@functools.cache
def load_schema() -> dict[str, Any]:
    """The schema as a dict (cached; do not modify)."""
    return json.loads(schema_text())


def default(definition: str, key: str) -> Any:
    """The ``default`` keyword of ``$defs.DEFINITION.properties.KEY`` as the schema writes it
    (durations as strings: parse them). Every config default is written there and only there;
    KeyError when the schema gives that key none."""
    return load_schema()["$defs"][definition]["properties"][key]["default"]


def action_fields(kind: str) -> dict[str, dict[str, Any]]:
    """The fields a built-in action kind accepts: name -> its property schema (from
    ``$defs.action.properties.KIND.properties``; {} for kinds whose value is a scalar). The one
    source of what an action may say: ``kinrun.actions`` compiles exactly these, with their
    ``enum`` and ``default`` keywords. KeyError for a kind the schema does not define."""
    return dict(load_schema()["$defs"]["action"]["properties"][kind].get("properties", {}))


def action_required(kind: str) -> tuple[str, ...]:
    """The fields a built-in action kind requires (the schema's ``required``)."""
    return tuple(load_schema()["$defs"]["action"]["properties"][kind].get("required", ()))


def action_default(kind: str, field: str) -> Any:
    """The schema's ``default`` of an action kind's field; None when it has none."""
    return action_fields(kind)[field].get("default")


@functools.cache
def _validator() -> jsonschema.protocols.Validator:
    return validator_class()(load_schema())


@functools.cache
def validator_class() -> type[jsonschema.protocols.Validator]:
    """Draft 2020-12 with kinrun's bounds: a ``number`` is finite (JSON has no NaN or infinity;
    YAML's ``.nan``/``.inf`` load as floats), and ``x-kinrun-duration: true`` refuses durations
    longer than ``kinrun.durations.MAX_DURATION`` (strings with ``{{`` are templates, left to
    their render)."""
    import jsonschema

    base = jsonschema.Draft202012Validator
    checker = base.TYPE_CHECKER.redefine(
        "number", lambda c, v: base.TYPE_CHECKER.is_type(v, "number") and _finite(v))
    return jsonschema.validators.extend(base, {"x-kinrun-duration": _duration_keyword},
                                        type_checker=checker)


def _finite(value: Any) -> bool:
    return not isinstance(value, float) or math.isfinite(value)


def _duration_keyword(validator: Any, enabled: Any, instance: Any, schema: dict[str, Any]) -> Any:
    """Yield the error of a duration that parses but is out of range (the ``type``, ``minimum``
    and ``pattern`` keywords report every other mistake)."""
    if not enabled or isinstance(instance, bool) or not isinstance(instance, (int, float, str)):
        return
    pattern = schema.get("pattern")
    if isinstance(instance, str) and (pattern is None or "{{" in instance
                                      or not re.search(pattern, instance)):
        return
    if isinstance(instance, (int, float)) and not (_finite(instance) and instance >= 0):
        return
    try:
        parse_duration(instance)
    except ValueError as exc:
        import jsonschema

        yield jsonschema.ValidationError(str(exc))


def validate(loaded: LoadedYaml) -> list[ConfigError]:
    """All schema errors of ``loaded.data``, located, sorted by line then column."""
    errors: list[ConfigError] = []
    for error in _validator().iter_errors(loaded.data):
        for path, message, at_key in describe_error(error):
            errors.append(locate(loaded, path, message, at_key=at_key))
    return sort_errors(errors)


def sort_errors(errors: Iterable[ConfigError]) -> list[ConfigError]:
    """Errors in file order (line, column, path), duplicates removed."""
    unique = {str(e): e for e in errors}
    return sorted(unique.values(), key=lambda e: (e.line or 0, e.column or 0, e.path, e.message))


def locate(loaded: LoadedYaml, path: PathKey, message: str, *, at_key: bool = False) -> ConfigError:
    """A ConfigError at ``path``: the value's position (the key's when ``at_key``), or the
    nearest recorded ancestor's when the path has no mark."""
    probe = tuple(path)
    while probe not in loaded.marks and probe:
        probe = probe[:-1]
    marks = loaded.marks.get(probe)
    line = column = None
    if marks is not None:
        use_key = at_key and probe == tuple(path) and marks.key_line is not None
        line = (marks.key_line if use_key else marks.line) + 1
        column = (marks.key_column if use_key else marks.column) + 1
    return ConfigError(message, file=loaded.file, line=line, column=column, path=format_path(path))


def show(value: Any) -> str:
    """A value as a user wrote it in YAML: strings quoted, true/false/null, short."""
    text = repr(value) if isinstance(value, str) else json.dumps(value, default=str)
    return text if len(text) <= 60 else text[:57] + "..."


def describe_error(error: jsonschema.ValidationError) -> list[tuple[PathKey, str, bool]]:
    """(path, message, at_key) triples for one jsonschema error, worded as kinrun words config
    errors (unknown keys with suggestions, durations, choices); [] for a ``oneOf`` over a
    scalar, whose type error says it all. Used for every schema kinrun validates (the config,
    ``kinrun test`` files)."""
    path: PathKey = tuple(error.absolute_path)
    schema, instance, kw = error.schema, error.instance, error.validator
    if kw == "additionalProperties" and isinstance(instance, dict) and schema.get(kw) is False:
        return [(path + (key,), _unknown_key(key, schema), True) for key in _extra_keys(instance, schema)]
    if kw == "dependentRequired" and isinstance(instance, dict):
        return [(path + (key,), f"{key!r} needs {', '.join(map(repr, deps))} in the same mapping", True)
                for key, deps in schema[kw].items()
                if key in instance and any(d not in instance for d in deps)]
    if kw == "oneOf" and not isinstance(instance, dict):
        return []  # the type error for this value says it all
    if "propertyNames" in error.relative_schema_path:
        hint = schema.get("x-kinrun-message") or f"does not match {schema.get('pattern')!r}"
        return [(path + (instance,), f"{show(instance)} {hint}", True)]
    return [(path, _message(error), False)]


def _extra_keys(instance: dict[str, Any], schema: dict[str, Any]) -> list[str]:
    allowed = schema.get("properties", {})
    return [k for k in instance if k not in allowed]


def _unknown_key(key: str, schema: dict[str, Any]) -> str:
    allowed = sorted(schema.get("properties", {}))
    close = difflib.get_close_matches(key, allowed, n=1)
    hint = f"did you mean {close[0]!r}? " if close else ""
    return f"unknown key {key!r} ({hint}allowed: {', '.join(allowed)})"


_SIMPLE: dict[str, Callable[[Any, Any], str]] = {
    "minimum": lambda v, a: f"{show(v)} is less than {a}",
    "maximum": lambda v, a: f"{show(v)} is greater than {a}",
    "exclusiveMinimum": lambda v, a: f"{show(v)} must be greater than {a}",
    "enum": lambda v, a: f"{show(v)} is not one of {', '.join(show(x) for x in a)}",
    "const": lambda v, a: f"{show(v)} is not allowed: expected {show(a)}",
    "uniqueItems": lambda v, a: f"{show(v)} has duplicate items",
    "type": lambda v, a: (f"{show(v)} is not of type {' or '.join(a if isinstance(a, list) else [a])}"
                          f" (it is {_type_name(v)})") if _finite(v) else
    f"{_yaml_float(v)} is not a finite number (JSON, and so kinrun, has no NaN or infinity)",
}


def _message(error: jsonschema.ValidationError) -> str:
    """A user-facing message for one (non key-level) jsonschema error."""
    schema, instance, kw, arg = error.schema, error.instance, error.validator, error.validator_value
    custom = schema.get("x-kinrun-message")
    if kw in ("pattern", "maxProperties") and custom:
        return f"{show(instance)} {custom}"
    if kw == "oneOf" and _is_required_choice(arg):
        return _choice_message(instance, arg)
    if kw == "required":
        missing = [k for k in arg if k not in instance]
        return f"missing required key{'s' if len(missing) > 1 else ''} {', '.join(map(repr, missing))}"
    if kw in ("minLength", "minItems", "minProperties") and arg == 1:
        return "must not be empty"
    if kw in _SIMPLE:
        return _SIMPLE[kw](instance, arg)
    return error.message


def _is_required_choice(branches: Any) -> bool:
    return isinstance(branches, list) and all(
        isinstance(b, dict) and set(b) == {"required"} and len(b["required"]) == 1 for b in branches)


def _choice_message(instance: Any, branches: list[dict[str, Any]]) -> str:
    keys = [b["required"][0] for b in branches]
    found = [k for k in keys if isinstance(instance, dict) and k in instance]
    listed = ", ".join(keys[:-1]) + f" or {keys[-1]}"
    return f"needs exactly one of {listed} (found {', '.join(found) if found else 'none'})"


def _yaml_float(value: float) -> str:
    return ".nan" if value != value else (".inf" if value > 0 else "-.inf")


def _type_name(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "string"
    return "list" if isinstance(value, list) else "mapping"
