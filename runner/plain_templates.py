"""Plain templates: literal text and ``{{ }}`` paths of plain dicts, rendered without Jinja2.

A template whose only parts are literal text and paths such as ``{{ obj.metadata.name }}`` or
``{{ obj['metadata']['name'] }}`` (a variable, then attribute names or constant string keys; no
filter, test, call, operator or statement) is what most ``log`` and ``event`` messages are:
``Sync/Add/Update for Pod {{ obj.metadata.name }}``, the client-go workqueue example's line.
Jinja2 renders one through a new Context, a generator and a budgeted join: 2.8 us for that
line in a tight loop, against 1.0 us walking its path (each with a fresh budget); inside the
pod-logger example's reconcile, 3.8 of its 16.5 us (benchmarks/HISTORY.md, round 11).
:class:`PlainTemplate` renders it by walking the paths, and answers
None whenever it cannot give exactly what Jinja2 would, so that the caller renders with Jinja2
(which then also raises the error Jinja2 raises):

* a path's variable must be in the render's variables (a global such as ``now``, or a missing
  name, goes to Jinja2), and each step must land in a plain ``dict`` (``type(x) is dict``)
  that holds the key; an attribute step must not name an attribute of ``dict`` (``.items``),
  as kinrun's sandbox resolves only other names as keys (``kinrun.templating._Sandbox``);
* every path is resolved before any value is printed; each value then goes through the same
  ``finalize`` (the output size check) and ``str()`` as Jinja2's compiled ``{{ }}``; if
  either raises, Jinja2 renders (and calls them again for the values before: the one case
  where a value's ``__str__`` runs twice);
* the text must fit the budget's output characters left, else Jinja2 renders (and fails);
  the caller spends the text's characters as Jinja2's render does
  (``RenderBudget.add_output``). A template of more parts than Jinja2 measures in one batch
  (``OUTPUT_BATCH``) has no plain form: past a batch, Jinja2 stops at the first one over the
  budget;
* the variables must be a plain ``dict`` (any other mapping, whose ``get`` could disagree
  with what Jinja2 reads, goes to Jinja2) whose keys are names, as every kinrun caller
  passes (a non-string key, which Jinja2 refuses, is not looked for).

:func:`plain_template` finds the parts from the syntax tree; the engine then renders both ways
once with a marker for each path and keeps the plain form only if the two texts are equal
(``kinrun.templating.TemplateEngine.template``), so a Jinja2 rule not mirrored here (a
whitespace setting, a name Jinja2 treats specially) costs the speed, never the output.
Immutable; thread-safe.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from jinja2 import nodes

Path = tuple[str, tuple[str, ...]]
"""A variable's name and the keys read under it, in order."""

_MISSING = object()


class PlainTemplate:
    """The parts of a plain template, in order: literal text (str) or a :data:`Path`."""

    __slots__ = ("parts",)

    def __init__(self, parts: tuple[str | Path, ...]) -> None:
        self.parts = parts

    @property
    def paths(self) -> list[Path]:
        """The paths, in order (repeats included)."""
        return [p for p in self.parts if not isinstance(p, str)]

    def render(self, variables: Mapping[str, Any], finalize: Callable[[Any], Any],
               room: int) -> str | None:
        """The text, or None when Jinja2 must render it (module docstring). ``variables``: a
        plain dict whose keys are names (what kinrun passes; any other mapping goes to
        Jinja2); ``finalize``: the environment's ``finalize``; ``room``: the output characters
        the budget has left (a longer text is left to Jinja2, which then fails; neither joins
        the chunks first)."""
        if type(variables) is not dict:
            return None
        values = []  # every path resolved before any value is printed (no str() twice)
        for part in self.parts:
            if type(part) is str:
                continue
            value = variables.get(part[0], _MISSING)  # type: ignore[index]
            for key in part[1]:  # type: ignore[index]
                if type(value) is not dict:
                    return None
                value = value.get(key, _MISSING)
            if value is _MISSING:
                return None
            values.append(value)
        out = []
        printed = iter(values)
        for part in self.parts:
            try:
                out.append(part if type(part) is str else str(finalize(next(printed))))
            except Exception:  # noqa: BLE001 - Jinja2 renders it, and raises what it raises
                return None
        return "".join(out) if sum(map(len, out)) <= room else None


def plain_template(tree: Any, dict_attributes: frozenset[str],
                   max_parts: int) -> PlainTemplate | None:
    """The PlainTemplate of a parsed template (``jinja2.nodes.Template``), or None when it is
    not plain (module docstring). ``dict_attributes``: the names an attribute step may not
    use (a plain dict's own attributes); ``max_parts``: the most parts (the output chunks
    Jinja2 measures at a time: with more, Jinja2 would stop at a batch over the budget, and
    print no later value)."""
    if not isinstance(tree, nodes.Template) or not tree.body:
        return None
    parts: list[str | Path] = []
    for statement in tree.body:
        if type(statement) is not nodes.Output:
            return None
        for node in statement.nodes:
            if type(node) is nodes.TemplateData:
                parts.append(node.data)
                continue
            path = _path(node, dict_attributes)
            if path is None:
                return None
            parts.append(path)
    if len(parts) > max_parts or all(isinstance(p, str) for p in parts):
        return None
    return PlainTemplate(tuple(parts))


def _path(node: Any, dict_attributes: frozenset[str]) -> Path | None:
    keys: list[str] = []
    while True:
        if type(node) is nodes.Getattr and node.attr not in dict_attributes:
            keys.append(node.attr)
        elif type(node) is nodes.Getitem and type(node.arg) is nodes.Const \
                and type(node.arg.value) is str:
            keys.append(node.arg.value)
        elif type(node) is nodes.Name and node.ctx == "load":
            return node.name, tuple(reversed(keys))
        else:
            return None
        node = node.node


def markers(template: PlainTemplate) -> dict[str, Any]:
    """Variables under which each path of ``template`` reads a text of its own (a path that
    is a prefix of another reads the dict of the longer one): the engine renders with them
    both ways and compares."""
    variables: dict[str, Any] = {}
    for index, (name, keys) in enumerate(template.paths):
        steps = (name, *keys)
        where = variables
        for step in steps[:-1]:
            if type(where.get(step)) is not dict:
                where[step] = {}
            where = where[step]
        if type(where.get(steps[-1])) is not dict:
            where[steps[-1]] = f"<kinrun-path-{index}>"
    return variables
