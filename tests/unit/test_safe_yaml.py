"""kinrun.safe_yaml: alias bombs, deep nesting and cycles are refused before anything is built;
every other document loads exactly as PyYAML's safe loader loads it."""

from __future__ import annotations

import pytest
import yaml

from kinrun import safe_yaml
from kinrun.safe_yaml import MAX_ALIAS_NODES, MAX_DEPTH, YamlLimitError

LOADERS = [pytest.param(yaml.SafeLoader, id="python"), pytest.param(safe_yaml.SAFE_LOADER, id="default")]


def laughs(levels: int, width: int = 10) -> str:
    """The billion laughs: ``width ** levels`` leaves reached through aliases."""
    rows = ["a0: &a0 [lol]"] + [f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * width) + "]"
                                for i in range(1, levels + 1)]
    return "\n".join(rows) + "\n"


@pytest.mark.parametrize("loader", LOADERS)
@pytest.mark.parametrize(("text", "message", "line"), [
    pytest.param(laughs(9), "aliases expand to more than", 6, id="billion-laughs"),
    pytest.param("&a [*a]", "recursive alias *a", 1, id="recursive-sequence"),
    pytest.param("a: &m {x: {y: *m}}", "recursive alias *m", 1, id="recursive-mapping"),
    pytest.param("[" * 900 + "]" * 900, f"nested more than {MAX_DEPTH} levels", 1, id="deep-flow"),
    pytest.param("".join(f"{' ' * i}k:\n" for i in range(MAX_DEPTH + 1)) + " " * 300 + "v",
                 f"nested more than {MAX_DEPTH} levels", MAX_DEPTH + 1, id="deep-block"),
    pytest.param("a: &a " + "[" * 200 + "]" * 200 + "\nb: " + "[" * 100 + "*a" + "]" * 100,
                 f"nested more than {MAX_DEPTH} levels", 2, id="deep-through-an-alias"),
    pytest.param("s: &s '" + "x" * 4096 + "'\nl: [" + ", ".join(["*s"] * 25_000) + "]",
                 "aliases expand to more than", 2, id="long-scalar-aliased"),
])
def test_bombs_are_refused_at_their_position(loader: type, text: str, message: str, line: int) -> None:
    """Each bomb is a YamlLimitError (a MarkedYAMLError) at the line where it goes off."""
    with pytest.raises(YamlLimitError) as caught:
        safe_yaml.load_all(text, loader)
    assert isinstance(caught.value, yaml.MarkedYAMLError)
    assert message in caught.value.problem
    assert caught.value.problem_mark.line + 1 == line


@pytest.mark.parametrize("loader", LOADERS)
@pytest.mark.parametrize("text", [pytest.param("[" * 10_000 + "]" * 10_000, id="flow"),
                                  pytest.param("{a: " * 10_000 + "1" + "}" * 10_000, id="flow-map")])
def test_ten_thousand_levels_are_a_yaml_error_not_a_recursion_error(loader: type, text: str) -> None:
    """Deep nesting is refused as bad YAML (libyaml stops flow nesting at 1000 itself)."""
    with pytest.raises(yaml.YAMLError, match="nest"):
        safe_yaml.load(text, loader)


def test_a_423_byte_request_body_bomb_is_refused() -> None:
    """A body as short as the one that crashed the embedded server is refused by load."""
    body = ("{apiVersion: v1, kind: ConfigMap, metadata: {name: b}, x: [&a0 [lol], "
            + ", ".join(f"&a{i} [" + ",".join([f"*a{i - 1}"] * 9) + "]" for i in range(1, 7))
            + "]}").encode()
    assert len(body) < 500
    with pytest.raises(YamlLimitError):
        safe_yaml.load(body)


@pytest.mark.parametrize("loader", LOADERS)
@pytest.mark.parametrize("text", [
    pytest.param("a: 1\nb: [x, {c: d}]\n", id="plain"),
    pytest.param("base: &b {x: 1}\nc:\n  <<: *b\n  y: 2\n", id="merge-key"),
    pytest.param(laughs(4), id="ten-thousand-laughs"),
    pytest.param("[" * MAX_DEPTH + "]" * MAX_DEPTH, id="deep-at-the-limit"),
    pytest.param("a: 1\n---\nb: &x [1]\nc: *x\n---\n", id="several-documents"),
    pytest.param("k: " + ", ".join(["v"] * 200_000), id="large-without-aliases"),
])
def test_documents_within_the_limits_load_as_pyyaml_loads_them(loader: type, text: str) -> None:
    """Within the limits, load_all is yaml.load_all with the same loader."""
    assert safe_yaml.load_all(text, loader) == list(yaml.load_all(text, Loader=loader))


def test_the_alias_limit_counts_nodes_exactly() -> None:
    """MAX_ALIAS_NODES aliased nodes load; one more is refused."""
    ok = "a: &a x\nb: [" + ", ".join(["*a"] * MAX_ALIAS_NODES) + "]\n"
    assert len(safe_yaml.load(ok)["b"]) == MAX_ALIAS_NODES
    with pytest.raises(YamlLimitError):
        safe_yaml.load(ok.replace("]\n", ", *a]\n"))


def test_syntax_errors_are_left_to_the_loader() -> None:
    """A document that does not parse raises PyYAML's own error, not a limit."""
    with pytest.raises(yaml.YAMLError) as caught:
        safe_yaml.load("a: [")
    assert not isinstance(caught.value, YamlLimitError)


def test_streams_are_read() -> None:
    """A file object is read whole, then checked and loaded."""
    import io

    assert safe_yaml.load_all(io.StringIO("a: 1\n---\nb: 2\n")) == [{"a": 1}, {"b": 2}]
