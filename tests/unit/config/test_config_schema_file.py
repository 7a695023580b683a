"""The schema file itself: valid draft 2020-12, documented, closed, shipped in the package."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import jsonschema

from kinrun.config import BUILTIN_ACTION_KINDS, load_schema, schema_text

SCHEMA_PATH = Path(__file__).parents[3] / "schemas" / "kinrun.schema.json"

# Object schemas that are deliberately open (free-form plugin parameters).
OPEN_OBJECTS = {"#/$defs/action/properties/with"}


def object_schemas(node: Any, where: str = "#") -> Iterator[tuple[str, dict[str, Any]]]:
    """Every subschema (with its JSON pointer) that can describe an object."""
    if isinstance(node, dict):
        types = node.get("type")
        if types == "object" or (isinstance(types, list) and "object" in types):
            yield where, node
        for key, value in node.items():
            yield from object_schemas(value, f"{where}/{key}")
    elif isinstance(node, list):
        for i, value in enumerate(node):
            yield from object_schemas(value, f"{where}/{i}")


def test_schema_is_valid_draft_2020_12() -> None:
    """The schema passes the 2020-12 meta-schema."""
    schema = load_schema()
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    jsonschema.Draft202012Validator.check_schema(schema)


def test_packaged_schema_is_the_repository_file() -> None:
    """importlib.resources finds exactly schemas/kinrun.schema.json."""
    assert schema_text() == SCHEMA_PATH.read_text(encoding="utf-8")


def test_every_object_is_closed() -> None:
    """additionalProperties is false, or a schema for map values, on every object schema."""
    for where, node in object_schemas(load_schema()):
        if where in OPEN_OBJECTS:
            continue
        assert "additionalProperties" in node, where
        assert node["additionalProperties"] is False or isinstance(node["additionalProperties"], dict), where


def test_every_property_has_a_description() -> None:
    """Each declared property says what it means."""
    for where, node in object_schemas(load_schema()):
        for name, prop in node.get("properties", {}).items():
            assert prop.get("description"), f"{where}/properties/{name}"


def test_action_kinds_in_schema_match_the_model() -> None:
    """The schema's action kinds are the model's built-in kinds plus the plugin escape."""
    action = load_schema()["$defs"]["action"]
    kinds = [branch["required"][0] for branch in action["oneOf"]]
    assert kinds == [*BUILTIN_ACTION_KINDS, "plugin"]


def test_schema_file_is_pretty_json() -> None:
    """The file parses as JSON with no duplicate keys (editors read it directly)."""
    def no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        keys = [k for k, _ in pairs]
        assert len(keys) == len(set(keys)), keys
        return dict(pairs)
    json.loads(SCHEMA_PATH.read_text(encoding="utf-8"), object_pairs_hook=no_duplicates)
