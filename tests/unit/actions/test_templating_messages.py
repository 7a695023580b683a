"""Template errors never quote a value: ``describe`` and ``scrub_quoted`` (docs/secrets.md)."""

from __future__ import annotations

import pytest

from kinrun.templating import describe, scrub_quoted



@pytest.mark.parametrize("value, text", [
    ("hunter2", "a str of 7 characters"), (b"xy", "a bytes of 2 bytes"),
    ([1, 2], "a list of 2 items"), ({"a": 1}, "a dict of 1 keys"), (3, "an int"),
    (None, "None"), (1.5, "a float"),
])
def test_describe_gives_type_and_size_only(value, text) -> None:
    """describe names the type and the size, never the content."""
    assert describe(value) == text


def test_scrub_keeps_what_the_template_wrote_and_type_names() -> None:
    """Quoted text written in the template, type names, operators and one punctuation
    character stay; any other quoted text becomes its type and size; apostrophes inside words
    are not quotes."""
    message = ("'dict object' has no attribute 'hunter2'; can't add 'str' and 'int' with '+'; "
               "no key \"it's secret\"; expected ',' near 'metdata'")
    assert scrub_quoted(message, "{{ obj.metdata }}") == (
        "'dict object' has no attribute <a str of 7 characters>; can't add 'str' and 'int' "
        "with '+'; no key <a str of 11 characters>; expected ',' near 'metdata'")


def test_scrub_handles_escaped_quotes() -> None:
    """A repr with escaped quotes is one quoted text, replaced whole."""
    assert scrub_quoted(r"KeyError: 'a\'b c'", "") == "KeyError: <a str of 5 characters>"
