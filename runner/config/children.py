"""Children graphs (the ``children`` action): each child's declaration, the dependency graph
between the children of one set, and the informers a config gets for them without declaring
any.

A ``children`` action names its children (``resources: [{name, manifest, dependsOn,
readyWhen, includeWhen}]``). Child B depends on child A when a template of B (its manifest,
``readyWhen`` or ``includeWhen``) reads ``children.A`` (or ``children['A']``), or when B lists A
in ``dependsOn``: as kro derives a ResourceGraphDefinition's edges from the CEL expressions that
reference other resources, plus Java Operator SDK's explicit ``dependsOn``. Children are
applied in a topological order of that graph (dependencies first; among independent
children, the order written) and deleted in the reverse order. A cycle is refused when the
config loads, naming each child of it with its file:line (kro refuses cycles when the
definition is created).

Each child's kind must be written literally (``apiVersion``/``kind`` without ``{{ }}``): it
is known before any render, so kinrun can watch the children it makes. For each controller
and child kind, :func:`with_child_informers` adds an informer (named
``<controller>-children-<kind>``; the primary's namespaces; label selector
``applyset.kubernetes.io/part-of``, so only objects of some ApplySet are listed, and an index
``applyset`` by that label's value) and a ``mapTo: owner`` watch of the controller on it, so a
child edited or deleted by hand queues its parent (drift correction, issue "children as a
graph"). The informer is metadata-only unless a child of that kind has ``readyWhen``, a
readiness that needs its status (:func:`needs_status`), or is read through ``children.NAME``
by a template of the controller. Pure: parsing only, no I/O.
"""

from __future__ import annotations

import dataclasses
import hashlib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import jinja2
import jinja2.nodes

from kinrun.config.manifest_kinds import literal_documents, literal_kinds
from kinrun.config.model import (ActionSpec, Config, ControllerSpec, FrozenMap, IndexerSpec,
                                 InformerSpec, WatchSpec, thaw)
from kinrun.kube.builtin_kinds import builtin_scope
from kinrun.kube.resources import split_api_version
from kinrun.template_reads import DICT_METHODS, template_strings
from kinrun.templating import SourceLocation, as_location, split_expression

PART_OF = "applyset.kubernetes.io/part-of"
"""Label on each child of an ApplySet: the id of the set it belongs to (KEP-3659)."""
INDEX = "applyset"
"""The index of a child informer: objects by the value of their :data:`PART_OF` label."""
CHILDREN = "children"
"""The template name of the children's live objects (``children.NAME``)."""
STATUS_KINDS = ("Deployment", "StatefulSet", "ReplicaSet", "DaemonSet", "Job", "Service")
"""Built-in kinds whose default readiness reads more than metadata (``kinrun.actions.readiness``)."""
_PARSER = jinja2.Environment()
"""Parses template sources for :func:`child_reads` (no filter or test is resolved)."""


@dataclass(frozen=True)
class ChildDecl:
    """One child of a ``children`` action, as written.

    ``name`` (unique in its set); ``api_version``/``kind`` (literal in the manifest);
    ``manifest`` (a template string or a mapping whose strings are templates);
    ``depends_on``: the children it waits for (``dependsOn`` plus those its templates read),
    in written order; ``reads``: the children its templates read; ``ready_when`` /
    ``include_when``: expressions or None; ``location``: its item in the file (its
    ``manifest``'s in ``manifest_location``)."""

    name: str
    api_version: str
    kind: str
    manifest: Any
    depends_on: tuple[str, ...]
    reads: frozenset[str]
    ready_when: str | None
    include_when: str | None
    location: SourceLocation
    manifest_location: SourceLocation


def child_reads(sources: Iterable[str]) -> frozenset[str]:
    """The children the Jinja2 ``sources`` read: ``NAME`` of each ``children.NAME`` and
    ``children['NAME']``. Raises ValueError for any other use of ``children`` (a computed
    index, a loop over it, passing it whole): the graph would be unknown. A source that does
    not parse reads nothing here (compiling it reports the error)."""
    found: set[str] = set()
    for source in sources:
        if not isinstance(source, str) or CHILDREN not in source:
            continue
        try:
            tree = _PARSER.parse(source)
        except jinja2.TemplateSyntaxError:
            continue
        found |= _reads_in(tree)
    return frozenset(found)


def _reads_in(tree: Any) -> set[str]:
    named: set[int] = set()
    found: set[str] = set()
    for node in tree.find_all((jinja2.nodes.Getattr, jinja2.nodes.Getitem)):
        base = node.node
        if not (isinstance(base, jinja2.nodes.Name) and base.name == CHILDREN):
            continue
        if isinstance(node, jinja2.nodes.Getattr):
            found.add(node.attr)
        elif isinstance(node.arg, jinja2.nodes.Const) and isinstance(node.arg.value, str):
            found.add(node.arg.value)
        else:
            continue
        named.add(id(base))
    for name in tree.find_all(jinja2.nodes.Name):
        if name.name == CHILDREN and id(name) not in named and name.ctx == "load":
            raise ValueError("children is read other than as children.NAME or "
                             "children['NAME'] (the dependency graph must be known)")
    return found


def declared_children(items: Sequence[Mapping[str, Any]], fields: Mapping[str, Any],
                      where: Any) -> tuple[ChildDecl, ...]:
    """The children ``items`` (a ``children`` action's ``resources``) declare, dependencies
    first (module docstring). ``fields``: the location of ``resources[I]`` and
    ``resources[I].KEY`` (``ActionSpec.field_locations``; missing ones fall back to
    ``where``, the action's). Raises ConfigError at the child for a name given twice, a kind
    not written literally, a ``dependsOn`` or ``children.NAME`` naming no child of the set, a
    child depending on itself, or a cycle (every child of it named with its file:line)."""
    decls: list[ChildDecl] = []
    for i, item in enumerate(items):
        here = as_location(fields.get(f"resources[{i}]", where), f"resources[{i}]")
        manifest_at = as_location(fields.get(f"resources[{i}].manifest", here),
                                  f"resources[{i}].manifest")
        decls.append(_declared(item, here, manifest_at))
    names = [d.name for d in decls]
    for i, decl in enumerate(decls):
        if decl.name in names[:i]:
            raise decl.location.config_error(f"children: the name {decl.name!r} is given twice")
        for dep in decl.depends_on:
            if dep == decl.name:
                raise decl.location.config_error(f"children: {decl.name!r} depends on itself")
            if dep not in names:
                raise decl.location.config_error(
                    f"children: {decl.name!r} depends on {dep!r}, which is no child of this "
                    f"set (children: {', '.join(names)})")
    return topological(decls)


def _declared(item: Mapping[str, Any], here: SourceLocation,
              manifest_at: SourceLocation) -> ChildDecl:
    name, manifest = item["name"], item["manifest"]
    if name in DICT_METHODS:
        raise here.config_error(f"children: a child may not be named {name!r}: "
                                f"children.{name} is the dict method (name it otherwise)")
    documents = len(literal_documents(manifest))
    if documents > 1:
        raise manifest_at.config_error(f"children: {name!r}: the manifest has {documents} "
                                       "documents; give each child its own entry")
    kinds = literal_kinds(manifest)
    if len(kinds) != 1:
        raise manifest_at.config_error(
            f"children: {name!r}: the manifest must be one object whose apiVersion and kind are "
            "written without templates (kinrun watches each child kind from the start)"
            if not kinds else f"children: {name!r}: the manifest names {len(kinds)} kinds; "
            "give each child its own entry")
    try:
        reads = child_reads([*template_strings(manifest), _as_template(item.get("readyWhen")),
                             _as_template(item.get("includeWhen"))])
    except ValueError as exc:
        raise here.config_error(f"children: {name!r}: {exc}") from None
    explicit = tuple(item.get("dependsOn") or ())
    depends = explicit + tuple(sorted(r for r in reads if r not in explicit))
    return ChildDecl(name, kinds[0][0], kinds[0][1], manifest, depends, reads,
                     item.get("readyWhen"), item.get("includeWhen"), here, manifest_at)


def _as_template(expression: Any) -> str:
    """An expression (with or without ``{{ }}``) as template text, for :func:`child_reads`."""
    if not isinstance(expression, str):
        return ""
    bare = split_expression(expression)
    return "{{ " + bare + " }}" if bare else expression


def topological(decls: Sequence[ChildDecl]) -> tuple[ChildDecl, ...]:
    """``decls`` with every child after the children it depends on; among children free to
    go, the written order (Kahn's algorithm, stable). Raises ConfigError naming each child of
    a cycle with its file:line."""
    done: dict[str, ChildDecl] = {}
    pending = list(decls)
    while pending:
        ready = next((d for d in pending if all(dep in done for dep in d.depends_on)), None)
        if ready is None:
            cycle = _cycle(pending)
            where = "; ".join(f"{d.name} at {d.location.file}:{d.location.line}"
                              for d in cycle)
            raise cycle[0].location.config_error(
                "children: a dependency cycle: " + " -> ".join(d.name for d in cycle)
                + f" -> {cycle[0].name} ({where}); break it by removing a dependsOn or a "
                "children.NAME read")
        done[ready.name] = ready
        pending.remove(ready)
    return tuple(done.values())


def _cycle(pending: Sequence[ChildDecl]) -> list[ChildDecl]:
    """One cycle among ``pending`` (each of which waits for another pending child)."""
    by_name = {d.name: d for d in pending}
    path: list[ChildDecl] = []
    current = pending[0]
    while current not in path:
        path.append(current)
        current = next(by_name[dep] for dep in current.depends_on if dep in by_name)
    return path[path.index(current):]


def dependents(decls: Sequence[ChildDecl], roots: Iterable[str]) -> set[str]:
    """The names of ``roots`` and of every child depending on one of them, directly or not
    (kro excludes the dependents of an excluded resource)."""
    out = set(roots)
    for decl in decls:  # dependencies first: one pass suffices
        if any(dep in out for dep in decl.depends_on):
            out.add(decl.name)
    return out


def needs_status(api_version: str, kind: str) -> bool:
    """Whether a child's default readiness reads more than its metadata: the kinds of
    :data:`STATUS_KINDS`, and every custom resource (its Ready condition)."""
    return kind in STATUS_KINDS or builtin_scope(api_version, kind) is None


def children_actions(spec: ControllerSpec) -> list[ActionSpec]:
    """The ``children`` actions of a controller's ``actions`` list."""
    return [a for a in spec.reconcile.actions if a.kind == CHILDREN and not a.plugin]


def with_child_informers(config: Config) -> Config:
    """``config`` plus, per controller with ``children`` actions, one informer per child kind
    and a ``mapTo: owner`` watch on it (module docstring); ``config`` itself when none has
    any. Raises ConfigError for a ``children`` action outside ``actions``, a child whose
    graph is refused (:func:`declared_children`), or a generated informer name that the
    config already uses."""
    for spec in config.controllers:
        rec = spec.reconcile
        for action in (*rec.on_delete, *rec.finalize, *rec.on_error):
            if action.kind == CHILDREN and not action.plugin:
                raise action.location.error(
                    "children runs in reconcile.actions only (its children are deleted, in "
                    "reverse order, before a finalizer is removed)")
    _one_set_per_kind(config)
    informers = dict(config.informers)
    controllers = []
    for spec in config.controllers:
        added = _child_informers(config, spec, informers)
        informers.update(added)
        watches = tuple(WatchSpec(name, "owner", location=inf.location)
                        for name, inf in added.items())
        controllers.append(dataclasses.replace(spec, watches=spec.watches + watches)
                           if watches else spec)
    if len(informers) == len(config.informers):
        return config
    return dataclasses.replace(config, informers=FrozenMap(informers),
                               controllers=tuple(controllers))


def _one_set_per_kind(config: Config) -> None:
    """Two controllers whose sets (``children``, or ``applySet`` with the reconciled object
    as its parent) may have the same parents (the same kind, namespaces that overlap, label
    selectors not :func:`~kinrun.selectors.disjoint`) would make one ApplySet each per
    parent, and each would prune the other's children: ConfigError at the second."""
    seen: list[tuple[ControllerSpec, InformerSpec]] = []
    for spec in config.controllers:
        sets = parent_sets(spec)
        if not sets:
            continue
        primary = config.informers[spec.primary]
        for other, other_primary in seen:
            if _may_share_objects(primary, other_primary):
                raise sets[0].location.error(
                    f"{sets[0].kind}: controller {other.name!r} already makes an ApplySet of "
                    f"the same {primary.kind or primary.resource} objects (one set per parent: "
                    "each would rewrite the other's ApplySet annotations on the parent, and "
                    "prune the other's children); put every child in one controller's "
                    "action, or select disjoint objects (labelSelector, fieldSelector, "
                    "namespaces)")
        seen.append((spec, primary))


def parent_sets(spec: ControllerSpec) -> list[ActionSpec]:
    """The actions of ``spec.reconcile.actions`` that make the reconciled object an ApplySet
    parent: ``children``, and ``applySet`` without its own ``parent``."""
    return [a for a in spec.reconcile.actions if not a.plugin and (
        a.kind == CHILDREN or (a.kind == "applySet" and thaw(a.spec).get("parent") is None))]


def _may_share_objects(a: InformerSpec, b: InformerSpec) -> bool:
    """Whether informers ``a`` and ``b`` may list one object: the same
    apiVersion and kind (or resource), namespaces that overlap (None: all), label and field
    selectors that are not provably disjoint."""
    from kinrun.selectors import (SelectorError, disjoint, fields_disjoint,
                                  parse_field_selector, parse_label_selector)
    if (a.api_version, a.kind or a.resource) != (b.api_version, b.kind or b.resource):
        return False
    if a.namespaces is not None and b.namespaces is not None \
            and not set(a.namespaces) & set(b.namespaces):
        return False
    try:
        return not disjoint(parse_label_selector(a.label_selector),
                            parse_label_selector(b.label_selector)) \
            and not fields_disjoint(parse_field_selector(a.field_selector),
                                    parse_field_selector(b.field_selector))
    except SelectorError:
        return True   # refused, with its own message, where the informer is checked


def _child_informers(config: Config, spec: ControllerSpec,
                     taken: Mapping[str, InformerSpec]) -> dict[str, InformerSpec]:
    actions = children_actions(spec)
    if not actions:
        return {}
    sets = parent_sets(spec)
    if len(sets) > 1:
        raise sets[1].location.error(
            f"{sets[1].kind}: the reconciled object is already the ApplySet parent of "
            f"{sets[0].kind} at line {sets[0].location.line}; one set per parent (each would "
            "prune the other's children): put every child in one children action")
    decls = [d for action in actions for d in declared_children(
        thaw(action.spec).get("resources") or [], action.field_locations, action.location)]
    read = _read_by_templates(spec)
    primary = config.informers[spec.primary]
    out: dict[str, InformerSpec] = {}
    for api_version, kind in dict.fromkeys((d.api_version, d.kind) for d in decls):
        mine = [d for d in decls if (d.api_version, d.kind) == (api_version, kind)]
        whole = needs_status(api_version, kind) or any(
            d.ready_when or d.name in read for d in mine)
        name = child_informer_name(spec.name, api_version, kind)
        if name in taken:
            raise taken[name].location.error(
                f"informer {name!r}: kinrun names the informer of controller {spec.name!r}'s "
                f"{kind} children so; rename this informer")
        out[name] = InformerSpec(
            name=name, api_version=api_version, kind=kind, namespaces=primary.namespaces,
            label_selector=PART_OF, metadata_only=not whole,
            resync_period=0.0,
            indexers=FrozenMap({INDEX: IndexerSpec(  # no location: equal in every controller,
                INDEX, expression=f"obj.metadata.labels['{PART_OF}']")}),  # so one is shared
            location=actions[0].location)
    return out


def _read_by_templates(spec: ControllerSpec) -> frozenset[str]:
    """The children any template of the controller's actions reads (``children.NAME``)."""
    sources = []
    for action in spec.reconcile.actions:
        raw = thaw(action.raw)
        sources += [*template_strings(raw), _as_template(raw.get("when"))]
        for item in (raw.get(CHILDREN) or {}).get("resources") or () if action.kind == CHILDREN \
                else ():
            sources += [_as_template(item.get("readyWhen")), _as_template(item.get("includeWhen"))]
    try:
        return child_reads(sources)
    except ValueError as exc:
        raise spec.location.error(f"controller {spec.name!r}: {exc}") from None


def child_informer_name(controller: str, api_version: str, kind: str) -> str:
    """The informer kinrun adds for ``controller``'s children of ``kind``:
    ``<controller>-children-<kind>`` (lowercase; ``-<group>`` added for a group other than
    the core and the built-in ones), shortened with a hash to 63 characters (a DNS label)."""
    group = split_api_version(api_version)[0]
    name = f"{controller}-children-{kind.lower()}"
    if group and builtin_scope(api_version, kind) is None:
        name += "-" + group.replace(".", "-")
    if len(name) > 63:
        digest = hashlib.sha256(name.encode()).hexdigest()[:8]
        name = f"{name[:54].rstrip('-')}-{digest}"
    return name


def graph_picture(spec: ControllerSpec, style: str) -> str:
    """The children graphs of ``spec``'s ``children`` actions as text: ``mermaid`` (a
    flowchart) or ``dot`` (Graphviz). A node per child (name and kind), an edge from each
    dependency to its dependent, in apply order; a child with ``includeWhen`` is dashed. A
    controller without ``children`` gives an empty graph."""
    decls = [d for action in children_actions(spec) for d in declared_children(
        thaw(action.spec).get("resources") or [], action.field_locations, action.location)]
    if style == "dot":
        lines = [f'digraph "{spec.name}" {{', "  rankdir=LR;"]
        for d in decls:
            dashed = ", style=dashed" if d.include_when else ""
            lines.append(f'  "{d.name}" [label="{d.name}\\n{d.kind}"{dashed}];')
        lines += [f'  "{dep}" -> "{d.name}";' for d in decls for dep in d.depends_on]
        return "\n".join(lines) + "\n}\n"
    lines = ["flowchart LR"]
    for d in decls:
        lines.append(f'  {d.name}["{d.name}: {d.kind}"]')
    lines += [f"  {dep} --> {d.name}" for d in decls for dep in d.depends_on]
    conditional = [d.name for d in decls if d.include_when]
    if conditional:
        lines += ["  classDef conditional stroke-dasharray: 5 5",
                  f"  class {','.join(conditional)} conditional"]
    return "\n".join(lines) + "\n"
