"""What one template reads of cached objects, conservatively: the input of projection.

``kinrun.template_reads`` follows reads to check them against schemas (a miss there is a typo
not caught); a projection built from a miss would silently drop a field a template needs. So
this walk of a template's Jinja2 syntax tree trusts only what it can see whole:

* a **chain** from a root, ``obj.spec.containers[0].image``, reads the value it ends on,
  whole (``spec.containers.[].image``); a variable subscript or a slice ends the chain before
  it (``obj.spec[k]`` reads all of ``spec``), and so does a dict method (``obj.spec.items()``,
  ``.get(...)``: all of ``spec``); ``(x | default(...)).y`` reads ``x.y`` (but
  ``default(..., true)``, which tests ``x``'s truth: all of ``x``);
* ``chain | map(attribute='a.b')`` reads ``a.b`` of each item of the chain's value
  (``spec.containers.[].image``), the mapped values whole;
* a **root** used other than as the start of a chain whose first step is a constant is read
  whole (``obj | to_json``, ``{% for k in obj %}``, ``{% set o = obj %}``, ``m(obj)``,
  ``obj or {}``, ``obj[k]``), but for a test of presence: ``if obj``, ``obj is none`` (or
  ``defined``, ``mapping`` ...), ``not obj``, and ``and``/``or`` operands where the whole
  ``and``/``or`` is itself only tested;
* the roots are ``obj`` and ``old`` (the reconciled informer's objects, or the informer named
  by the caller), ``get('INFORMER', ...)`` with a literal name (that informer's objects), and
  the controller's vars that stand for one of those (``aliases``); ``list(...)`` and
  ``by_index(...)`` items are read whole; any other use of ``get``/``list``/``by_index`` (a
  computed name, keywords, ``*args``, the function passed or renamed) reads every informer
  whole;
* names bound inside the template need no following: what they are bound to is a chain read
  whole, or a root read whole.

A template that includes or imports another reads every informer whole.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field

from jinja2 import nodes

ITEMS = "[]"
"""A path step for every item of a list (an integer subscript)."""
DICT_METHODS = frozenset({"items", "keys", "values", "get", "copy"})
"""Attribute names that are methods of a dict: a chain through one reads the dict whole."""
STR_METHODS = frozenset(name for name in dir(str) if not name.startswith("_"))
"""Attribute names that are methods of a string: a chain ending in one (``name.upper()``)
reads the value before it (a field so named is kept with its parent: more, never less)."""
LOOKUPS = frozenset({"get", "list", "by_index"})
"""The template functions that return cached objects."""
PRESENCE_TESTS = frozenset({"none", "defined", "undefined", "mapping", "string", "number",
                            "sequence", "iterable", "boolean", "integer", "float"})
"""Jinja2 tests that look at a value's presence or type only."""
ROOTS = ("obj", "old")
EVERY = "*"
"""The informer name standing for every informer (a lookup whose informer is not known)."""


@dataclass
class CacheReads:
    """What a template reads: ``paths`` (informer -> paths read), ``whole`` ((informer, why,
    template line) of each whole read; informer ``EVERY``: all of them)."""

    paths: dict[str, set[tuple[str, ...]]] = field(default_factory=dict)
    whole: list[tuple[str, str, int]] = field(default_factory=list)

    def add(self, informer: str, path: tuple[str, ...], line: int, how: str) -> None:
        for i, step in enumerate(path):
            if step in DICT_METHODS:
                path = path[:i]
                break
        if path and path[-1] in STR_METHODS:
            path = path[:-1]
        if path:
            self.paths.setdefault(informer, set()).add(path)
        else:
            self.whole.append((informer, how, line))


def cache_reads(tree: nodes.Node, primary: str | None,
                aliases: Mapping[str, str] | None = None) -> CacheReads:
    """The reads of one parsed template (module docstring). ``primary``: the informer ``obj``
    and ``old`` are objects of (None: they are not cached objects here); ``aliases``: var name
    -> informer, for the vars that stand for a root."""
    found = CacheReads()
    if any(True for _ in tree.find_all((nodes.Include, nodes.Import, nodes.FromImport,
                                        nodes.Extends))):
        found.whole.append((EVERY, "a template that includes or imports another", 1))
        return found
    _Walk(found, primary, dict(aliases or {})).visit(tree, False)
    return found


class _Walk:
    def __init__(self, found: CacheReads, primary: str | None, aliases: dict[str, str]) -> None:
        self.found, self.primary, self.aliases = found, primary, aliases

    def root(self, node: nodes.Node) -> str | None:
        """The informer a root node stands for; None for no root (a lookup with a computed
        name is ``EVERY``)."""
        if isinstance(node, nodes.Name) and node.ctx == "load":
            if node.name in ROOTS:
                return self.primary
            return self.aliases.get(node.name)
        if isinstance(node, nodes.Call) and isinstance(node.node, nodes.Name) \
                and node.node.name == "get":
            return literal_informer(node) or EVERY
        return None

    def visit(self, node: nodes.Node, truth: bool) -> None:
        """Walk ``node``; ``truth``: its value is only tested for truth."""
        if isinstance(node, (nodes.Getattr, nodes.Getitem)):
            self.chain(node)
        elif isinstance(node, nodes.Filter) and isinstance(node.node, (nodes.Getattr,
                                                                       nodes.Getitem)) \
                and (mapped := _mapped_attribute(node)) is not None:
            self.chain(node.node, mapped)
            self.children(node, skip=node.node)
        elif isinstance(node, nodes.Name) and node.ctx == "load":
            self.name(node, truth)
        elif isinstance(node, nodes.Call):
            self.call(node, truth)
        elif isinstance(node, nodes.Test) and node.name in PRESENCE_TESTS:
            self.visit(node.node, True)
            self.children(node, skip=node.node)
        elif isinstance(node, (nodes.If, nodes.CondExpr)):
            self.visit(node.test, True)
            self.children(node, skip=node.test)
        elif isinstance(node, nodes.For):
            self.visit(node.iter, False)
            if node.test is not None:
                self.visit(node.test, True)
            self.children(node, skip=(node.iter, node.test))
        elif isinstance(node, nodes.Not):
            self.visit(node.node, True)
        elif isinstance(node, (nodes.And, nodes.Or)):
            self.visit(node.left, truth)
            self.visit(node.right, truth)
        else:
            self.children(node)

    def children(self, node: nodes.Node, skip: object = ()) -> None:
        skipped = skip if isinstance(skip, tuple) else (skip,)
        for child in node.iter_child_nodes():
            if not any(child is s for s in skipped):
                self.visit(child, False)

    def name(self, node: nodes.Name, truth: bool) -> None:
        if node.name in LOOKUPS:  # the function itself, passed on or renamed
            self.found.whole.append((EVERY, f"{node.name} used other than called with a "
                                            "literal informer name", node.lineno))
            return
        informer = self.root(node)
        if informer is not None and not truth:
            self.found.whole.append((informer, f"{node.name} used whole", node.lineno))

    def call(self, node: nodes.Call, truth: bool) -> None:
        function = node.node.name if isinstance(node.node, nodes.Name) else None
        if function in LOOKUPS:
            informer = literal_informer(node)
            if informer is None:
                self.found.whole.append((EVERY, f"{function}() with an informer name not "
                                                "written out", node.lineno))
            elif function != "get" or not truth:
                self.found.whole.append((informer, f"{function}('{informer}', ...) "
                                         + ("items" if function != "get" else "used whole"),
                                         node.lineno))
            for child in node.iter_child_nodes():
                if child is not node.node:
                    self.visit(child, False)
            return
        self.children(node)

    def chain(self, node: nodes.Node, mapped: tuple[str, ...] = ()) -> None:
        """A chain of attributes and subscripts: the root's path, then what its steps use.
        ``mapped``: the steps ``| map(attribute=...)`` reads of each item of the chain's
        value (appended when every step of the chain is constant)."""
        steps: list[nodes.Node] = []
        base = node
        while True:
            if isinstance(base, (nodes.Getattr, nodes.Getitem)):
                steps.append(base)
                base = base.node
            elif isinstance(base, nodes.Filter) and base.name == "default" \
                    and base.node is not None and _tests_definedness_only(base):
                steps.append(base)  # (x | default(...)).y reads x.y
                base = base.node
            else:
                break
        informer = self.root(base)
        if informer is None:
            self.visit(base, False)
        else:
            self.path(informer, list(reversed(steps)), base, mapped)
        for step in steps:  # subscripts' and defaults' own expressions
            for child in step.iter_child_nodes():
                if child is not step.node:
                    self.visit(child, False)

    def path(self, informer: str, steps: list[nodes.Node], base: nodes.Node,
             mapped: tuple[str, ...] = ()) -> None:
        path: list[str] = []
        for step in steps:
            if isinstance(step, nodes.Filter):
                continue
            key = _constant_step(step)
            if key is None:
                break  # a variable subscript or a slice: the value before it, whole
            path.append(key)
        else:
            path.extend(mapped)
        if isinstance(base, nodes.Call):  # get(...) itself: its arguments
            for child in base.iter_child_nodes():
                if child is not base.node:
                    self.visit(child, False)
        self.found.add(informer, tuple(path), base.lineno, "a chain with a computed first step")


def alias_reads(value: nodes.Node, primary: str | None,
                aliases: Mapping[str, str] | None = None) -> CacheReads:
    """The reads of a var's expression that stands for a cached object (:func:`alias_of`):
    the lookup's arguments and a condition's test, not the object (its uses are its reads)."""
    found = CacheReads()
    walk = _Walk(found, primary, dict(aliases or {}))
    if isinstance(value, nodes.CondExpr):
        walk.visit(value.test, True)
        value = value.expr1
    if isinstance(value, nodes.Call):
        for child in value.iter_child_nodes():
            if child is not value.node:
                walk.visit(child, False)
    return found


def alias_of(value: nodes.Node, primary: str, aliases: Mapping[str, str]) -> str | None:
    """The informer whose object a var's expression stands for, whole or nothing: ``obj``,
    ``old``, another such var, ``get('INFORMER', ...)``, or ``X if TEST else none`` for one
    of those; else None."""
    if isinstance(value, nodes.CondExpr):
        other = value.expr2
        if other is not None and not (isinstance(other, nodes.Const) and other.value is None):
            return None
        value = value.expr1
    if isinstance(value, nodes.Name):
        return primary if value.name in ROOTS else aliases.get(value.name)
    if isinstance(value, nodes.Call) and isinstance(value.node, nodes.Name) \
            and value.node.name == "get":
        return literal_informer(value)
    return None


def _tests_definedness_only(node: nodes.Filter) -> bool:
    """Whether a ``default`` filter looks only at whether its value is defined (not at its
    truth, ``default(y, true)``: a projected map can be empty where the whole one is not)."""
    if node.dyn_args is not None or node.dyn_kwargs is not None or len(node.args) > 2:
        return False
    boolean = [kw.value for kw in node.kwargs if kw.key == "boolean"]
    boolean += node.args[1:]
    return all(isinstance(b, nodes.Const) and b.value is False for b in boolean)


def _mapped_attribute(node: nodes.Filter) -> tuple[str, ...] | None:
    """The steps ``x | map(attribute='a.0.b')`` reads of each item of ``x``: ``[]`` then the
    attribute's parts (a number part is a list index, as Jinja2's attribute getter reads it:
    ``[]``); None for any other filter or form (a computed attribute, ``map('upper')``)."""
    if node.name != "map" or node.args or node.dyn_args is not None \
            or node.dyn_kwargs is not None:
        return None
    attribute = [kw.value for kw in node.kwargs if kw.key == "attribute"]
    if len(attribute) != 1 or any(kw.key not in ("attribute", "default") for kw in node.kwargs):
        return None
    value = attribute[0]
    if not isinstance(value, nodes.Const) or not isinstance(value.value, str):
        return None
    parts = value.value.split(".")
    if any(part in ("", ITEMS) for part in parts):
        return None
    return (ITEMS, *(ITEMS if part.isdigit() else part for part in parts))


def _constant_step(step: nodes.Node) -> str | None:
    """The path step of a constant attribute or subscript; None for a computed one."""
    if isinstance(step, nodes.Getattr):
        return step.attr if step.attr != ITEMS else None
    arg = step.arg  # type: ignore[attr-defined]
    if isinstance(arg, nodes.Const):
        if isinstance(arg.value, bool):
            return None
        if isinstance(arg.value, int):
            return ITEMS
        if isinstance(arg.value, str) and arg.value not in ("", ITEMS):
            return arg.value
    return None


def literal_informer(call: nodes.Call) -> str | None:
    """The informer a lookup call names with a literal first argument and nothing computed
    (no keywords, no ``*args``/``**kwargs``); else None."""
    if call.kwargs or call.dyn_args is not None or call.dyn_kwargs is not None:
        return None
    if call.args and isinstance(call.args[0], nodes.Const) and isinstance(call.args[0].value,
                                                                          str):
        return call.args[0].value
    return None


def bound_names(tree: nodes.Node) -> Iterator[str]:
    """Every name a template binds (loop targets, ``set``, ``with``, macro and call-block
    parameters): a var of that name is shadowed somewhere."""
    for node in tree.find_all((nodes.For, nodes.Assign, nodes.AssignBlock, nodes.With,
                               nodes.Macro, nodes.CallBlock)):
        targets: list[nodes.Node] = []
        if isinstance(node, (nodes.For, nodes.Assign, nodes.AssignBlock)):
            targets = [node.target]
        elif isinstance(node, nodes.With):
            targets = list(node.targets)
        else:
            targets = list(node.args)
        for target in targets:
            for name in target.find_all(nodes.Name) if not isinstance(target, nodes.Name) \
                    else [target]:
                yield name.name
