"""Label and field selector parsing and matching (pure functions)."""

from __future__ import annotations

import pytest

from kinrun.selectors import (SelectorError, field_value, label_key_error, label_value_error,
                              parse_field_selector, parse_label_selector)


@pytest.mark.parametrize("text,labels,expected", [
    pytest.param("a=1", {"a": "1"}, True, id="eq"),
    pytest.param("a=1", {"a": "2"}, False, id="eq-miss"),
    pytest.param("a!=1", {}, True, id="neq-missing-key"),
    pytest.param("a in (1,2)", {"a": "2"}, True, id="in"),
    pytest.param("a notin (1,2)", {"a": "3"}, True, id="notin"),
    pytest.param("a,b", {"a": "", "b": "x"}, True, id="exists-both"),
    pytest.param("!a", {"b": "1"}, True, id="not-exists"),
    pytest.param("a>3", {"a": "4"}, True, id="gt"),
    pytest.param("a<3", {"a": "4"}, False, id="lt"),
    pytest.param("example.com/role=db", {"example.com/role": "db"}, True, id="prefixed-key"),
    pytest.param(" a = 1 , b != 2 ", {"a": "1", "b": "3"}, True, id="spaces"),
])
def test_label_selector_matching(text, labels, expected):
    """Parsed label selectors match labels as apimachinery's labels.Selector."""
    assert parse_label_selector(text).matches(labels) is expected


@pytest.mark.parametrize("text", ["a in", "a in (1", "in (1)", "a=b=c", "a,", "-a=1", "a=-1-"])
def test_label_selector_errors(text):
    """Malformed label selectors raise SelectorError (the server's 400)."""
    with pytest.raises(SelectorError) as info:
        parse_label_selector(text)
    assert str(info.value)


def test_field_selector_escapes_and_operators():
    """Field selectors support =, ==, != and backslash escapes."""
    sel = parse_field_selector(r"metadata.name=a\,b,spec.nodeName!=n1,status.phase==Running")
    values = {"metadata.name": "a,b", "spec.nodeName": "n2", "status.phase": "Running"}
    assert sel.matches(lambda k: values.get(k, ""))
    assert sel.value_of("metadata.name") == "a,b"


def test_field_selector_without_operator_is_bad_request():
    """A field term without an operator raises 400."""
    with pytest.raises(SelectorError):
        parse_field_selector("metadata.name")


def test_field_value_formats():
    """field_value renders booleans as true/false and missing paths as ""."""
    obj = {"spec": {"hostNetwork": True, "n": 3}}
    assert field_value(obj, "spec.hostNetwork") == "true"
    assert field_value(obj, "spec.n") == "3"
    assert field_value(obj, "spec.missing.deeper") == ""


from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet="ab=!,() inotx-./1", max_size=30))
def test_label_selector_parser_never_hangs_or_crashes(text):
    """Any input either parses or raises SelectorError (no other exception, no hang)."""
    try:
        parse_label_selector(text)
    except SelectorError as exc:
        assert str(exc)


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet="ab=!,\\.x ", max_size=30))
def test_field_selector_parser_never_crashes(text):
    """Any field selector input either parses or raises SelectorError."""
    try:
        parse_field_selector(text)
    except SelectorError as exc:
        assert str(exc)


@pytest.mark.parametrize("text", ["app\n", "a\n", "example.com\n/app"])
def test_a_trailing_newline_is_no_label_key_or_value(text: str) -> None:
    """Go's regexps match the whole string: a newline at the end is refused (Python's ``$``
    matched before it)."""
    assert label_key_error(text) is not None
    assert label_value_error(text) is not None


def test_the_embedded_server_refuses_names_and_keys_ending_in_a_newline() -> None:
    from kinrun.testing.apiserver.kind_validation import _key_errors, label_error
    from kinrun.testing.apiserver.registry import BUILTINS
    from kinrun.testing.apiserver.validation import name_error

    configmaps = next(t for t in BUILTINS if t.kind == "ConfigMap")
    namespaces = next(t for t in BUILTINS if t.kind == "Namespace")
    assert name_error(configmaps, "web\n") is not None
    assert name_error(namespaces, "team\n") is not None
    assert label_error("c\n") is not None and _key_errors({"k\n": "v"}, "data")
