"""What a template reads of the reconciled object, and ``validate``'s check of it against the
kind's schema: a misspelt field (``obj.metdata.name``) is an error at the template's line, with
the closest field, instead of a failing reconcile (kro type-checks its expressions the same
way against the OpenAPI schema of what they read).

Read paths are taken from the template's Jinja2 syntax tree: every chain of attribute and
constant subscript reads rooted at ``obj`` or ``old`` (``obj.spec.containers[0].image`` reads
``spec.containers[].image``; through ``(x | default({})).y`` too). The analysis is
conservative where it cannot know: a subscript
with a variable, or an object passed whole to a filter or function, ends the path there (what
follows is not checked); a path through ``| default(...)`` is still a read.

Checked against the schema of the controller's primary kind (``kinrun.openapi``: the built-in
kinds of kube-apiserver 1.20.2, and the CRDs of the config's ``crds:``); maps
(``additionalProperties``: labels, annotations, data) and ``x-kubernetes-preserve-unknown-
fields`` are open; a dict method name (``items``, ``keys``, ``values``, ``get``) is not a
field, and a field of such a name read with a dot (``vol.configMap.items``: Jinja2 reads the
attribute first, so the template gets the method) is refused with the subscript to write
instead (:func:`method_reads`). A kind without a schema is not checked.
"""

from __future__ import annotations

import difflib
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from jinja2 import nodes

from kinrun.cache_reads import bound_names
from kinrun.openapi import Schema

ROOTS = ("obj", "old")
"""The names that hold the reconciled object in templates."""
DICT_METHODS = frozenset({"items", "keys", "values", "get", "copy"})
"""Names that read a dict's method, not a field (``obj['items']`` reads the field)."""
WIDE_SCALARS = ("integer", "number", "string", "boolean")


@dataclass(frozen=True)
class Read:
    """One read: ``root`` (``obj``, ``old``, or ``get:INFORMER`` for what a ``get('INFORMER',
    key)`` lookup returns), ``path`` (field names; ``[]`` for a list item), ``line`` (1-based
    line in the template)."""

    root: str
    path: tuple[str, ...]
    line: int


Binding = tuple[str, tuple[str, ...]]
"""What a name stands for: a root and the path to it (``c`` in ``{% for c in
obj.spec.containers %}``: ``("obj", ("spec", "containers", "[]"))``)."""


def bindings(tree: nodes.Node, given: Mapping[str, Binding | None] | None = None
             ) -> dict[str, Binding | None]:
    """The names bound once in ``tree`` to a read (``{% for x in CHAIN %}``, ``{% set x =
    CHAIN %}``, ``for x in list('INFORMER')``), added to ``given`` (the vars'). A name the
    template binds otherwise maps to None (not followed: its reads are not checked): one
    bound more than once, or to something else, or by ``with``, a ``set`` block, a macro's
    or call block's parameters (``kinrun.cache_reads.bound_names``); a var the template
    binds again (a loop variable of its name is scoped to the loop: which one a use means
    is not followed); and ``obj``/``old`` bound again (``{% for obj in list('cms') %}``)."""
    found: dict[str, Binding | None] = {}
    for node in tree.find_all((nodes.For, nodes.Assign)):
        target = node.target
        if not isinstance(target, nodes.Name):
            continue
        value = node.iter if isinstance(node, nodes.For) else node.node
        bound = bound_to(value, given or {})
        if bound is not None and isinstance(node, nodes.For):
            bound = (bound[0], (*bound[1], "[]")) if bound[0] != "list" else bound
        if bound is not None and bound[0] == "list":
            bound = (f"get:{bound[1][0]}", ())
        found[target.name] = None if target.name in found or target.name in (given or {}) \
            or target.name in ROOTS else bound
    simple = Counter(node.target.name for node in tree.find_all((nodes.For, nodes.Assign))
                     if isinstance(node.target, nodes.Name))
    for name, times in Counter(bound_names(tree)).items():  # any other way: not followed
        if found.get(name) is None or times != simple[name]:
            found[name] = None
    return {**{k: v for k, v in (given or {}).items() if k not in found}, **found}


def bound_to(value: nodes.Node, given: Mapping[str, Binding | None]) -> Binding | None:
    """The read an expression stands for (a chain, a ``get``, ``list('INFORMER')``; ``a if c
    else b`` when ``b`` is none or stands for the same as ``a``; ``x | default(CONSTANT)``),
    or None: a chain through a computed subscript (``obj.spec[f]``), or two branches that
    may stand for different objects, is not followed."""
    if isinstance(value, nodes.CondExpr):
        first = bound_to(value.expr1, given)
        other = value.expr2
        if other is None or (isinstance(other, nodes.Const) and other.value is None):
            return first
        return first if first is not None and bound_to(other, given) == first else None
    if isinstance(value, nodes.Filter) and value.name in ("default", "d") \
            and value.node is not None:
        constant = all(isinstance(arg, (nodes.Const, nodes.Dict, nodes.List))
                       for arg in value.args[:1])
        return bound_to(value.node, given) if constant else None
    if isinstance(value, (nodes.Getattr, nodes.Getitem)) and _computed_step(value):
        return None
    if isinstance(value, nodes.Call) and isinstance(value.node, nodes.Name) \
            and value.node.name == "list" and value.args \
            and isinstance(value.args[0], nodes.Const) and isinstance(value.args[0].value, str):
        return "list", (value.args[0].value,)
    if isinstance(value, nodes.Name) and value.name in given:  # None: hidden, not followed
        return given[value.name]
    if isinstance(value, nodes.Name) and value.name in ROOTS:
        return value.name, ()
    informer = _lookup(value)
    if informer is not None:
        return f"get:{informer}", ()
    return _chain(value, given) if isinstance(value, (nodes.Getattr, nodes.Getitem)) else None


def reads(tree: nodes.Node, given: Mapping[str, Binding | None] | None = None) -> list[Read]:
    """Every maximal read chain of ``obj``/``old``/``get`` (and of names bound to them:
    :func:`bindings`) in a parsed template or expression."""
    names = bindings(tree, given)
    found: list[Read] = []
    inner: set[int] = set()
    for node in tree.find_all((nodes.Getattr, nodes.Getitem)):
        chain = _chain(node, names)
        if chain is None:
            continue
        for sub in _links(node):
            inner.add(id(sub))
        found.append((node, chain))  # type: ignore[arg-type]
    return [Read(root, path, node.lineno) for node, (root, path) in found  # type: ignore[misc]
            if id(node) not in inner]


def whole_reads(tree: nodes.Node, given: Mapping[str, Binding | None] | None = None,
                expression: bool = False) -> list[tuple[str, int, str]]:
    """Where a template reads objects whole, so no list of paths says what it needs:
    ``(root, template line, how)`` for each ``obj``/``old`` (or a name bound to one, or a
    ``get('INFORMER', ...)``) used other than as the start of a chain of attributes or
    subscripts (passed to a filter or function, such as ``obj | to_json``; compared; looped
    over), and for each ``list('INFORMER')``/``by_index('INFORMER', ...)`` (their items are
    not followed). Not whole: a test of truth (``x is none``, ``if x``, ``not x``, ``a and
    x``) and a value bound to a name (``{% set d = get(...) %}``, a loop, a var given as
    ``expression``, whose uses are followed where they are). Roots as :func:`reads` names
    them (``get:INFORMER``). Conservative: a projection of the cache must keep whole objects
    for these."""
    names = bindings(tree, given)
    chained = {id(node.node) for node in tree.find_all((nodes.Getattr, nodes.Getitem))}
    chained |= _truth_tests(tree) | _bound_values(tree, expression)
    found: list[tuple[str, int, str]] = []
    for node in tree.find_all(nodes.Name):
        if node.ctx != "load" or id(node) in chained:
            continue
        bound = names.get(node.name) if node.name in names else (
            (node.name, ()) if node.name in ROOTS else None)
        if bound is not None and not bound[1] and bound[0] != "list":
            found.append((bound[0], node.lineno, f"{node.name} used whole"))
    for call in tree.find_all(nodes.Call):
        if not (isinstance(call.node, nodes.Name) and call.args
                and isinstance(call.args[0], nodes.Const) and isinstance(call.args[0].value, str)):
            continue
        function, informer = call.node.name, call.args[0].value
        if function in ("list", "by_index") or (function == "get" and id(call) not in chained):
            found.append((f"get:{informer}", call.lineno, f"{function}('{informer}', ...) "
                          "items" if function != "get" else f"get('{informer}', ...) used whole"))
    return found


def _truth_tests(tree: nodes.Node) -> set[int]:
    """Ids of the nodes only tested for truth or none-ness (they read nothing under them)."""
    out: set[int] = set()
    for node in tree.find_all((nodes.Test, nodes.CondExpr, nodes.If, nodes.Not, nodes.And,
                               nodes.Or)):
        if isinstance(node, nodes.Test) and node.name in ("none", "defined", "undefined"):
            out.add(id(node.node))
        elif isinstance(node, (nodes.CondExpr, nodes.If)):
            out.add(id(node.test))
        elif isinstance(node, nodes.Not):
            out.add(id(node.node))
        elif isinstance(node, (nodes.And, nodes.Or)):
            out |= {id(node.left), id(node.right)}
    return out


def _bound_values(tree: nodes.Node, expression: bool) -> set[int]:
    """Ids of the values bound to a name (``set``, a loop's iterable, the whole expression of
    a var), through ``a if c else b`` and ``x | default(...)``."""
    values = [n.node if isinstance(n, nodes.Assign) else n.iter
              for n in tree.find_all((nodes.Assign, nodes.For))]
    if expression:
        values += [node for out in tree.find_all(nodes.Output) for node in out.nodes]
    out: set[int] = set()
    while values:
        value = values.pop()
        out.add(id(value))
        if isinstance(value, nodes.CondExpr):
            values += [value.expr1] + ([value.expr2] if value.expr2 is not None else [])
        elif isinstance(value, nodes.Filter) and value.name in ("default", "d") and value.node:
            values.append(value.node)
    return out


def _links(node: nodes.Node) -> Iterator[nodes.Node]:
    """The shorter chains inside ``node`` (its own ``node.node`` links)."""
    current = getattr(node, "node", None)
    while isinstance(current, (nodes.Getattr, nodes.Getitem)):
        yield current
        current = current.node


def _chain(node: nodes.Node, names: Mapping[str, Binding | None] | None = None
           ) -> tuple[str, tuple[str, ...]] | None:
    path: list[str] = []
    while isinstance(node, (nodes.Getattr, nodes.Getitem)):
        if isinstance(node, nodes.Getattr):
            path.append(node.attr)
        elif isinstance(node.arg, nodes.Const) and isinstance(node.arg.value, str):
            path.append(node.arg.value)
        elif isinstance(node.arg, nodes.Const) and isinstance(node.arg.value, int):
            path.append("[]")
        else:
            path = []  # a variable subscript: what is read before it is known, after not
        node = node.node
        while isinstance(node, nodes.Filter) and node.name == "default" and node.node:
            node = node.node  # (x | default({})).y reads x.y
    if isinstance(node, nodes.Name) and names and node.name in names:  # bound in the template
        bound = names[node.name]
        if bound is None or not path:
            return None
        return bound[0], (*bound[1], *reversed(path))
    if isinstance(node, nodes.Name) and node.name in ROOTS and path:
        return node.name, tuple(reversed(path))
    informer = _lookup(node)
    if informer is not None and path:
        return f"get:{informer}", tuple(reversed(path))
    return None


def _computed_step(node: nodes.Node) -> bool:
    """Whether a chain of attributes and subscripts has a subscript that is not a constant."""
    while isinstance(node, (nodes.Getattr, nodes.Getitem)):
        if isinstance(node, nodes.Getitem) and not isinstance(node.arg, nodes.Const):
            return True
        node = node.node
    return False


def _lookup(node: nodes.Node) -> str | None:
    """The informer of a ``get('INFORMER', ...)`` call with a literal name, else None."""
    if isinstance(node, nodes.Call) and isinstance(node.node, nodes.Name) \
            and node.node.name == "get" and node.args \
            and isinstance(node.args[0], nodes.Const) and isinstance(node.args[0].value, str):
        return node.args[0].value
    return None


OBJECT_META = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"
"""Every object's ``metadata`` (apimachinery's ObjectMeta), also where a CRD's schema leaves
``apiVersion``, ``kind`` and ``metadata`` out, as CRD schemas usually do."""


def _object_meta() -> Schema:
    from kinrun.openapi import builtin_document

    document = builtin_document()
    return Schema(document.get("definitions") or {}, {"$ref": f"#/definitions/{OBJECT_META}"})


def problems(schema: Schema, path: Iterable[str]) -> str | None:
    """Why ``path`` is not a field of ``schema`` (``metdata: no such field; did you mean
    'metadata'?``), or None when it is, or when the schema cannot tell. ``apiVersion``,
    ``kind`` and ``metadata`` (ObjectMeta) are fields of every object."""
    path = list(path)
    if path and path[0] in ("apiVersion", "kind"):
        return None
    if path and path[0] == "metadata" and schema.child("metadata") is None:
        return problems(_object_meta(), path[1:]) if len(path) > 1 else None
    if path and schema.child(path[0]) is None and path[0] not in DICT_METHODS \
            and schema.node.get("properties") is not None:
        known = sorted({*schema.properties, "apiVersion", "kind", "metadata"})
        close = difflib.get_close_matches(path[0], known, n=1)
        hint = f"; did you mean {close[0]!r}?" if close else ""
        if not schema.preserves_unknown and schema.additional is None:
            return f"the object has no field {path[0]!r}{hint}"
    node: Schema | None = schema
    done: list[str] = []
    for name in path:
        if node is None or node.preserves_unknown or node.type in WIDE_SCALARS:
            return None
        if name == "[]":
            node = node.items
        elif name in DICT_METHODS and node.type == "object" and node.child(name) is None:
            return None
        else:
            child = node.child(name)
            if child is None and node.additional is not None:
                child = node.additional
            if child is None:
                if node.type not in ("object", "") or not node.properties:
                    return None  # untyped here: open
                return _unknown(name, done, node)
            node = child
        done.append(name)
    return None


def _unknown(name: str, done: list[str], node: Schema) -> str:
    where = ".".join(done).replace(".[]", "[]") or "the object"
    close = difflib.get_close_matches(name, sorted(node.properties), n=1)
    hint = f"; did you mean {close[0]!r}?" if close else ""
    return f"{where} has no field {name!r}{hint}"


def check_template(tree: nodes.Node, schemas: Mapping[str, Schema | None],
                   given: Mapping[str, Binding | None] | None = None) -> list[tuple[Read, str]]:
    """Each read of ``tree`` that its root's schema (``schemas``: root -> Schema or None:
    ``obj``/``old``, ``get:INFORMER``) says does not exist, with why; ``given``: names bound
    outside the template (the controller's vars)."""
    out = []
    for read in reads(tree, given):
        schema = schemas.get(read.root)
        why = problems(schema, read.path) if schema is not None else None
        if why is not None:
            out.append((read, why))
    return out + method_reads(tree, schemas, given)


def method_reads(tree: nodes.Node, schemas: Mapping[str, Schema | None],
                 given: Mapping[str, Binding | None] | None = None) -> list[tuple[Read, str]]:
    """Attribute reads of a field named as a dict method (``vol.configMap.items``,
    ``expr.values``) where the schema has that field, and of an action's result so named
    (``results.copy``): Jinja2 reads the attribute first, so the template gets the dict's
    method, not the field (``x['items']`` reads the field). Calls (``labels.items()``) are
    what they look like and pass."""
    called = {id(node.node) for node in tree.find_all(nodes.Call)}
    names = bindings(tree, given)
    out = []
    for node in tree.find_all(nodes.Getattr):
        if node.attr not in DICT_METHODS or id(node) in called:
            continue
        if isinstance(node.node, nodes.Name) and node.node.name == "results":
            out.append((Read("results", (node.attr,), node.lineno),
                        f"results.{node.attr} is the dict method {node.attr!r} in a template, "
                        f"not the result of the action named {node.attr!r}: write "
                        f"results[{node.attr!r}]"))
            continue
        chain = _chain(node, names)
        schema = schemas.get(chain[0]) if chain is not None else None
        if chain is None or schema is None or not _has_field(schema, chain[1]):
            continue
        parent = ".".join(chain[1][:-1]).replace(".[]", "[]")
        out.append((Read(chain[0], chain[1], node.lineno),
                    f"{parent}.{node.attr} is the dict method {node.attr!r} in a template, not "
                    f"the field (attributes are read first): write {parent}[{node.attr!r}]"))
    return out


def _has_field(schema: Schema, path: tuple[str, ...]) -> bool:
    """Whether ``path`` (ending in a field name) names a field ``schema`` declares."""
    node: Schema | None = schema
    for name in path[:-1]:
        if node is None:
            return False
        node = node.items if name == "[]" else node.child(name)
    return node is not None and node.child(path[-1]) is not None


def var_bindings(spec: Any, engine: Any) -> dict[str, Any]:
    """The controller's vars that stand for a read (``deploy: get('deployments', k)``), in
    order, each seeing the ones before (:func:`bound_to`)."""
    given: dict[str, Any] = {}
    for var in spec.reconcile.vars:
        value = engine.value_node(var.expression)  # None: a template, its value is text
        if value is not None:
            bound = bound_to(value, given)
            if bound is not None and bound[0] != "list":
                given[var.name] = bound
    return given



def template_strings(value: Any) -> Iterator[str]:
    """Every string in an action's configuration (mappings and lists walked)."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, Mapping):
        for item in value.values():
            yield from template_strings(item)
    elif isinstance(value, (list, tuple)):
        for item in value:
            yield from template_strings(item)
