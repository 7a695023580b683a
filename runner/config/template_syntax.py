"""Load-time Jinja2 syntax checks for every template and expression in a config.

Only the syntax is checked (a plain ``jinja2.Environment`` parses; nothing is compiled or
rendered, so filters that plugins add later are not required here). Which strings are what:

- templates: ``log`` (or ``log.message``), ``apply.manifest``, ``patch.patch``, every field
  of ``patch.target``/``delete.target``, ``event.reason``/``event.message``, a
  ``requeueAfter`` containing ``{{``, and ``mapTo.template``;
- expressions: ``when`` and string indexers, bare (``obj.spec.nodeName``) or wrapped
  (``{{ obj.spec.nodeName }}``); one mixing text and ``{{ }}`` is a template whose value is the
  rendered string (see :func:`kinrun.templating.split_expression`).

An error names the YAML position of the offending template line: for block scalars (``|``)
template line n is n lines below the indicator; the message also gives the template line.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import jinja2
from jinja2.parser import Parser

from kinrun.config.loader import LoadedYaml, PathKey, format_path
from kinrun.errors import ConfigError
from kinrun.templating import MAX_TREE_DEPTH, deeper_than, split_expression

_ENV = jinja2.Environment()

_TARGET_FIELDS = ("apiVersion", "kind", "name", "namespace")


def parse_template(source: str) -> None:
    """Parse a template; raises jinja2.TemplateSyntaxError (also for one nested deeper than
    :data:`~kinrun.templating.MAX_TREE_DEPTH`, which could never compile)."""
    _check_depth(lambda: _ENV.parse(source))


_TOO_DEEP = (f"nested more than {MAX_TREE_DEPTH} levels deep (it could not compile); split it "
             "into vars")


def _check_depth(parse: Callable[[], Any]) -> None:
    """Run ``parse``; TemplateSyntaxError when its tree, or Jinja2's recursive parser on the
    way to it, goes deeper than MAX_TREE_DEPTH."""
    try:
        tree = parse()
    except RecursionError:
        raise jinja2.TemplateSyntaxError(_TOO_DEEP, 1) from None
    if deeper_than(tree, MAX_TREE_DEPTH):
        raise jinja2.TemplateSyntaxError(_TOO_DEEP, 1)


def parse_expression(source: str) -> None:
    """Parse an expression (bare or wrapped in ``{{ }}``; a template-valued one is parsed as a
    template); raises TemplateSyntaxError (also when nested too deeply, as templates)."""
    bare = split_expression(source)
    if bare is None:
        _check_depth(lambda: _ENV.parse(source))
        return
    if not bare:
        raise jinja2.TemplateSyntaxError("empty expression", 1)
    parser = Parser(_ENV, bare, state="variable")
    _check_depth(parser.parse_expression)
    if not parser.stream.eos:
        raise jinja2.TemplateSyntaxError(
            f"unexpected {parser.stream.current.value!r} after the expression",
            parser.stream.current.lineno)


def check_templates(loaded: LoadedYaml) -> list[ConfigError]:
    """Syntax errors of every template and expression in ``loaded.data`` (schema-valid data)."""
    errors, checked = [], set()
    for path, source, is_expression in _sources(loaded.data):
        checked.add(path)
        try:
            (parse_expression if is_expression else parse_template)(source)
        except jinja2.TemplateSyntaxError as exc:
            errors.append(_error(loaded, path, source, exc, is_expression))
    for path, source in _long_strings(loaded.data):
        if path not in checked and _too_deep(source):
            errors.append(_error(loaded, path, source, jinja2.TemplateSyntaxError(_TOO_DEEP, 1),
                                 "{{" not in source and "{%" not in source))
    return errors


def _long_strings(data: Any) -> Iterator[tuple[PathKey, str]]:
    """Every string of ``data`` of at least MAX_TREE_DEPTH characters, with its path: only
    those can nest that deep (each level of a syntax tree takes a character at least)."""
    stack: list[tuple[PathKey, Any]] = [((), data)]
    while stack:
        path, value = stack.pop()
        if isinstance(value, str) and len(value) >= MAX_TREE_DEPTH:
            yield path, value
        elif isinstance(value, dict):
            stack.extend((path + (k,), v) for k, v in value.items())
        elif isinstance(value, list):
            stack.extend((path + (i,), v) for i, v in enumerate(value))


def _too_deep(source: str) -> bool:
    """Whether ``source``, as a template (with ``{{``/``{%``) or else as an expression, nests
    deeper than MAX_TREE_DEPTH: a field :func:`_sources` does not name (vars, status, stop,
    children, admission rules...) is checked for that only; its syntax is checked when it is
    compiled. Text that is neither parses as nothing and passes."""
    try:
        (parse_template if "{{" in source or "{%" in source else parse_expression)(source)
    except jinja2.TemplateSyntaxError as exc:
        return exc.message == _TOO_DEEP
    return False


def _error(loaded: LoadedYaml, path: PathKey, source: str, exc: jinja2.TemplateSyntaxError,
           is_expression: bool) -> ConfigError:
    what = "expression" if is_expression else "template"
    lineno = exc.lineno or 1
    multiline = "\n" in source.strip("\n")
    suffix = f" (line {lineno} of the {what})" if multiline else ""
    message = f"{what} syntax error: {exc.message}{suffix}"
    marks = loaded.marks.get(path)
    if marks is None:
        return ConfigError(message, file=loaded.file, path=format_path(path))
    if marks.style in ("|", ">"):
        line0 = marks.line + lineno
        text_lines = loaded.text.splitlines()
        text = text_lines[line0] if line0 < len(text_lines) else ""
        column = len(text) - len(text.lstrip()) + 1
    else:
        line0 = marks.line + lineno - 1
        column = marks.column + 1 if lineno == 1 else 1
    return ConfigError(message, file=loaded.file, line=line0 + 1, column=column,
                       path=format_path(path))


def _sources(data: Any) -> Iterator[tuple[PathKey, str, bool]]:
    """(path, source, is_expression) for every template/expression in the config."""
    if not isinstance(data, dict):
        return
    for name, informer in _items(data.get("informers")):
        for index_name, indexer in _items(informer.get("indexers") if isinstance(informer, dict) else None):
            if isinstance(indexer, str):
                yield ("informers", name, "indexers", index_name), indexer, True
    for i, controller in enumerate(data.get("controllers") or []):
        if not isinstance(controller, dict):
            continue
        base: PathKey = ("controllers", i)
        for j, watch in enumerate(controller.get("watches") or []):
            map_to = watch.get("mapTo") if isinstance(watch, dict) else None
            if isinstance(map_to, dict) and isinstance(map_to.get("template"), str):
                yield base + ("watches", j, "mapTo", "template"), map_to["template"], False
        finalizer = controller.get("finalizer")
        if isinstance(finalizer, dict) and isinstance(finalizer.get("when"), str):
            yield base + ("finalizer", "when"), finalizer["when"], True
        reconcile = controller.get("reconcile")
        for list_name in ("actions", "onDelete", "finalize", "onError"):
            items = reconcile.get(list_name) if isinstance(reconcile, dict) else None
            for k, action in enumerate(items or []):
                if isinstance(action, dict):
                    yield from _action_sources(base + ("reconcile", list_name, k), action)


def _action_sources(base: PathKey, action: dict[str, Any]) -> Iterator[tuple[PathKey, str, bool]]:
    for key in ("when", "forEach"):
        if isinstance(action.get(key), str):
            yield base + (key,), action[key], True
    for kind, value in action.items():
        yield from _kind_sources(base + (kind,), kind, value)


def _kind_sources(path: PathKey, kind: str, value: Any) -> Iterator[tuple[PathKey, str, bool]]:
    if kind == "requeueAfter" and isinstance(value, str) and "{{" in value:
        yield path, value, False
    if kind == "log" and isinstance(value, str):
        yield path, value, False
    if not isinstance(value, dict):
        return
    fields = {"log": ("message",), "apply": ("manifest",), "patch": ("patch",),
              "event": ("reason", "message"), "create": ("manifest",),
              "applySet": ("manifests",)}.get(kind, ())
    if kind == "applySet" and isinstance(value.get("forEach"), str):
        yield path + ("forEach",), value["forEach"], True
    for f in fields:
        if isinstance(value.get(f), str):
            yield path + (f,), value[f], False
    target = value.get("target") if kind in ("patch", "delete") else \
        value.get("parent") if kind == "applySet" else None
    if isinstance(target, dict):
        for f in _TARGET_FIELDS:
            if isinstance(target.get(f), str):
                yield path + ("target", f), target[f], False


def _items(value: Any) -> list[tuple[str, Any]]:
    return list(value.items()) if isinstance(value, dict) else []
