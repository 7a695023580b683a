"""The YAML loader: marks for every value, and YAML 1.1 surprises reported, not swallowed."""

from __future__ import annotations

import pytest

from kinrun.config.loader import format_path, load_yaml


def test_marks_record_key_and_value_positions() -> None:
    """Each path maps to the 0-based line/column of its value and of its key."""
    loaded = load_yaml("a:\n  b: [1, {c: x}]\n", "f.yaml")
    assert loaded.errors == []
    assert loaded.data == {"a": {"b": [1, {"c": "x"}]}}
    b = loaded.marks[("a", "b")]
    assert (b.key_line, b.key_column, b.line, b.column) == (1, 2, 1, 5)
    c = loaded.marks[("a", "b", 1, "c")]
    assert (c.line, c.column) == (1, 13)


def test_block_scalar_style_is_recorded() -> None:
    """The scalar style is kept, so template lines can be mapped into block scalars."""
    loaded = load_yaml("t: |\n  x\n", "f.yaml")
    assert loaded.marks[("t",)].style == "|"


@pytest.mark.parametrize("text", ["on: 1\n", "yes: 1\n", "Off: 1\n", "true: 1\n"])
def test_boolean_keys_are_errors(text: str) -> None:
    """A key that YAML 1.1 loads as a boolean is rejected, naming the key."""
    loaded = load_yaml(text, "f.yaml")
    assert loaded.data is None
    key = text.split(":")[0]
    assert [str(e) for e in loaded.errors] == [
        f"f.yaml:1:1: key {key!r} loads as a boolean in YAML 1.1: quote it ('{key}':)"]


@pytest.mark.parametrize("word", ["yes", "No", "ON", "off"])
def test_yaml11_boolean_words_as_values_are_errors(word: str) -> None:
    """Plain yes/no/on/off values are rejected; quoted ones are strings."""
    assert load_yaml(f"a: {word}\n", "f.yaml").errors
    assert load_yaml(f"a: '{word}'\n", "f.yaml").data == {"a": word}


def test_true_and_false_stay_booleans() -> None:
    """true/false are the booleans they look like."""
    assert load_yaml("a: true\nb: False\n", "f.yaml").data == {"a": True, "b": False}


def test_non_string_keys_are_errors() -> None:
    """Integer and null keys are rejected."""
    errors = load_yaml("1: a\n~: b\n", "f.yaml").errors
    assert [e.line for e in errors] == [1, 2]
    assert all("is not a string" in e.message for e in errors)


def test_timestamps_stay_strings() -> None:
    """A date-like value is not turned into a datetime."""
    assert load_yaml("a: 2024-01-02\n", "f.yaml").data == {"a": "2024-01-02"}


def test_merge_keys_and_aliases_work() -> None:
    """Anchors, aliases and << merges load as in YAML."""
    loaded = load_yaml("base: &b {x: 1}\nc:\n  <<: *b\n  y: 2\n", "f.yaml")
    assert loaded.data == {"base": {"x": 1}, "c": {"x": 1, "y": 2}}


def test_a_local_key_overrides_a_merged_one() -> None:
    """YAML 1.1 merge keys: a key of the mapping itself overrides the same key merged in with
    ``<<``, and an earlier merged mapping overrides a later one; no duplicate reported."""
    loaded = load_yaml("a: &a {x: 1, y: 1}\nb: &b {x: 2, z: 2}\n"
                       "c:\n  <<: [*a, *b]\n  y: 3\n", "f.yaml")
    assert loaded.errors == []
    assert loaded.data["c"] == {"x": 1, "y": 3, "z": 2}
    assert loaded.marks[("c", "y")].line == 4  # the local key's place


def test_a_real_duplicate_beside_a_merge_key_is_still_refused() -> None:
    """Two local keys with the same name stay an error even when the mapping merges."""
    loaded = load_yaml("a: &a {x: 1}\nc:\n  <<: *a\n  y: 1\n  y: 2\n", "f.yaml")
    assert [(e.line, "duplicate key 'y'" in e.message) for e in loaded.errors] == [(5, True)]


def test_recursive_alias_is_an_error_not_a_hang() -> None:
    """A self-referencing alias is reported instead of recursing forever."""
    loaded = load_yaml("a: &x [1, *x]\n", "f.yaml")
    assert len(loaded.errors) == 1 and "recursive alias" in loaded.errors[0].message


def test_all_errors_are_reported_in_file_order() -> None:
    """Several problems are all reported, sorted by line."""
    loaded = load_yaml("a: 1\nb: yes\na: 2\non: 3\n", "f.yaml")
    assert [e.line for e in loaded.errors] == [2, 3, 4]


@pytest.mark.parametrize(("path", "text"), [
    ((), ""), (("controllers", 0, "workers"), "controllers[0].workers"),
    (("informers", "my-pods", "indexers", "byNode"), "informers.my-pods.indexers.byNode"),
    (("a", "b.c"), "a['b.c']"),
])
def test_format_path(path: tuple, text: str) -> None:
    """Key paths render as dotted names with [index], quoting unusual keys."""
    assert format_path(path) == text


def test_a_plain_equals_sign_is_the_string() -> None:
    """YAML 1.1 resolves a plain ``=`` to its "value key" type; configs get the string."""
    loaded = load_yaml("sep: =\n", "f.yaml")
    assert loaded.errors == [] and loaded.data == {"sep": "="}


@pytest.mark.parametrize("text", ["a: !!python/name:os.system x\n", "a: !custom x\n"])
def test_unknown_scalar_tags_are_errors_with_the_position(text: str) -> None:
    loaded = load_yaml(text, "f.yaml")
    assert loaded.data is None
    [error] = loaded.errors
    assert str(error).startswith("f.yaml:1:4: a: cannot load 'x'")
