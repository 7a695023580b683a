"""Results of earlier actions: ``results.<action name>`` in templates, and what reads them.

``results`` maps each named action of a program (``name:``) that ran before to the server's
answer to what it sent: the object an ``apply``/``create``/``patch`` got back (so
``results.make_child.metadata.uid`` is the uid the server gave a created child; write
``results['make-child']`` for names that are not identifiers), the answer of a ``delete``
(None when the object was already gone), the list of the applied children's answers for an
``applySet``, a list for an action that sent several requests, and None for an action that
sent nothing (its ``when:`` was false).

Which actions read results is decided at compile time from their templates
(:func:`result_reads`: the names ``results`` is indexed with, or "any" for a computed index),
so :class:`kinrun.actions.program.ActionProgram` renders every other action before anything is
sent and each reading action just before it executes. Where no server answers (``kinrun
render``, a program run without a client), each value is a :class:`Placeholder` that renders
as ``<result of action 'make-child' at metadata.uid>`` (no ``: `` or ``#`` in it, so it stays one
plain YAML scalar even unquoted).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from typing import Any

import jinja2
from jinja2 import nodes

RESULTS = "results"
"""The template name of the results of earlier actions."""

ANY = None
"""What :func:`result_reads` gives for a template that indexes ``results`` with a computed
value: it may read any earlier action."""

_PARSER = jinja2.Environment()  # parsing only: filters and tests are resolved at compile time


def result_reads(sources: Iterable[tuple[str, bool]]) -> frozenset[str] | None:
    """The action names that the templates ``sources`` read from ``results``.

    ``sources``: (text, is_expression) pairs: a template, or a bare expression (``when:``,
    ``forEach:``) with or without ``{{ }}``. Returns the names read (empty: ``results`` is not
    read), or :data:`ANY` (None) when ``results`` is used other than as ``results.NAME`` or
    ``results['NAME']``. A template that does not parse reads nothing (its syntax error is
    reported where it is compiled)."""
    names: set[str] = set()
    for text, expression in sources:
        if expression and "{{" not in text and "{%" not in text:
            text = "{{ " + text + " }}"
        try:
            tree = _PARSER.parse(text)
        except jinja2.TemplateSyntaxError:
            continue
        found = _indexed(tree)
        if found is ANY:
            return ANY
        names |= found
    return frozenset(names)


def _indexed(tree: nodes.Template) -> set[str] | None:
    uses = sum(1 for n in tree.find_all(nodes.Name) if n.name == RESULTS and n.ctx == "load")
    if not uses:
        return set()
    names: set[str] = set()
    covered = 0
    for node in tree.find_all((nodes.Getattr, nodes.Getitem)):
        inner = node.node
        if not (isinstance(inner, nodes.Name) and inner.name == RESULTS):
            continue
        if isinstance(node, nodes.Getattr):
            names.add(node.attr)
        elif isinstance(node.arg, nodes.Const) and isinstance(node.arg.value, str):
            names.add(node.arg.value)
        else:
            return ANY
        covered += 1
    return names if covered == uses else ANY


EXPRESSION_KEYS = ("when", "forEach", "readyWhen", "includeWhen")
"""Keys whose string value is an expression (no ``{{ }}``), wherever they are nested."""


def template_sources(value: Any, *, expression: bool = False) -> Iterator[tuple[str, bool]]:
    """Every string of an action's value (mappings and lists walked; keys not templated), as
    (text, is_expression): ``when`` and ``forEach`` values, and a child's ``readyWhen`` and
    ``includeWhen``, are expressions, others templates."""
    if isinstance(value, str):
        if expression or "{{" in value or "{%" in value:
            yield value, expression
    elif isinstance(value, Mapping):
        for key, item in value.items():
            yield from template_sources(item, expression=key in EXPRESSION_KEYS)
    elif isinstance(value, (list, tuple)):
        for item in value:
            yield from template_sources(item)


class Placeholder:
    """The stand-in of a result no server gave (``kinrun render``): any attribute or item of
    it is another placeholder one step deeper; it renders as ``<result of action 'NAME' at
    PATH>``. Truthy; iterates as empty; equal only to itself."""

    __slots__ = ("_action", "_path")

    def __init__(self, action: str, path: str = "") -> None:
        self._action, self._path = action, path

    def __getattr__(self, name: str) -> Placeholder:
        if name.startswith("__"):
            raise AttributeError(name)
        return Placeholder(self._action, f"{self._path}.{name}" if self._path else name)

    def __getitem__(self, key: Any) -> Placeholder:
        return self.__getattr__(str(key))

    def __iter__(self) -> Iterator[Any]:
        return iter(())

    def __len__(self) -> int:
        return 0

    def __bool__(self) -> bool:
        return True

    def __str__(self) -> str:
        at = f" at {self._path}" if self._path else ""
        return f"<result of action '{self._action}'{at}>"

    __repr__ = __str__


def json_default(value: Any) -> str:
    """``json.dumps(..., default=json_default)``: a :class:`Placeholder` as its text (what
    ``kinrun render`` shows where the server's answer would be); TypeError for anything else,
    as without ``default``. Real results are plain JSON data, so only render meets these."""
    if isinstance(value, Placeholder):
        return str(value)
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


def placeholders(names: Iterable[str]) -> dict[str, Placeholder]:
    """``results`` as ``kinrun render`` shows it: a Placeholder per action name."""
    return {name: Placeholder(name) for name in names}


def answer_of(answers: list[Any]) -> Any:
    """One action's entry in ``results`` from the answers of its steps, in order (module
    docstring): None for none, the answer for one, else the list."""
    if not answers:
        return None
    return answers[0] if len(answers) == 1 else list(answers)
