"""What a config reads of each informer's objects, and so what its cache must keep.

``informer_reads(config, engine, pm)`` walks every reader of cached objects a config has and
gives, per informer, the paths read (``spec.replicas``, ``spec.containers.[].image``) and the
reasons its objects are read whole, if any. ``projection_for`` turns that into the informer's
``kinrun.kube.projection.Projection`` (``projection: auto``), or None (whole objects).

Readers, and what they count for:

* every string of a controller's reconcile (``vars``, ``actions``, ``onDelete``,
  ``finalize``, ``onError``, ``finalizer.when``): each is analysed both as a template and as a
  bare expression (whichever it is at run time, its reads are counted) by
  ``kinrun.cache_reads``: ``obj``/``old`` are the primary's objects, ``get('INFORMER', ...)``
  another informer's, a var that stands for one of them (``deploy: get(...)``) that one's
  unless a template binds its name again; chains keep the value they end on, any other use
  of an object keeps it whole;
* ``mapTo`` templates (``obj`` is the watched informer's object), index expressions (the
  informer's own), admission rules' lookups (their ``object`` is the request's, not cached);
* ``status`` actions read the primary's whole ``status``; field selectors their keys; a
  Secret's ``data`` and ``stringData`` are read by kinrun's redaction;
* whole objects everywhere for what is not analysed: a controller's hooks without ``reads:``
  (with ``reads:``, the primary gets those paths, and every other informer is whole: hooks
  may read any lister), plugin actions, plugin indexes and plugin event hooks, a template
  that includes or imports another (``{% include %}``); child informers of a ``children``
  action (their drift check compares whole objects).

A path step that names a dict method (``items``, ``keys``, ``values``, ``get``, ``copy``) ends
the path: the value before it is kept whole (``obj.spec.items()`` reads all of ``spec``).
``apiVersion``, ``kind`` and the ``metadata`` fields kinrun reads itself are always kept
(``kinrun.kube.projection.METADATA_KEPT``); ``metadata.annotations`` when a template reads
them, an ``annotationsChanged`` predicate compares them, or an ``applySet``/``children``
action makes the primary object an ApplySet parent (its annotations record the set).

The analysis is conservative by construction: where it cannot know, it keeps more. Proven
against the whole decode by ``tests/unit/test_projection_differential.py`` (every example
config, random objects, projection on and off: the same requests and logs) and
``tests/unit/test_projection_breaks.py`` (the templates an adversarial review wrote).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import jinja2
import orjson
from jinja2 import nodes

from kinrun.config.model import Config, ControllerSpec, InformerSpec, Location
from kinrun.kube.projection import ITEMS, Projection, shown
from kinrun.cache_reads import (DICT_METHODS, EVERY, CacheReads, alias_of, alias_reads,
                                bound_names, cache_reads)
from kinrun.template_reads import template_strings

Path = tuple[str, ...]

_INCLUDES = (nodes.Include, nodes.Import, nodes.FromImport, nodes.Extends)


@dataclass(frozen=True)
class InformerReads:
    """What a config reads of one informer's objects: ``paths`` (tuples of map keys, ``[]``
    for list items; a path reads the whole value it ends on) and ``whole``: why its objects
    are read whole (``"... at FILE:LINE"``; empty when the paths say it all)."""

    paths: frozenset[Path] = frozenset()
    whole: tuple[str, ...] = ()


class _Reads:
    """The analysis' accumulator: informer name -> paths, and -> whole-object reasons."""

    def __init__(self, names: Iterable[str]) -> None:
        self.paths: dict[str, set[Path]] = {name: set() for name in names}
        self.whole: dict[str, list[str]] = {name: [] for name in self.paths}

    def path(self, informer: str | None, path: Path) -> None:
        if informer not in self.paths:
            return  # an unknown informer fails validate elsewhere
        for i, step in enumerate(path):
            if step in DICT_METHODS:
                path = path[:i]  # a method of the value before it: that value whole
                break
        if path:
            self.paths[informer].add(path)
        else:
            self.whole[informer].append("the object read with a dict method")

    def whole_of(self, informer: str | None, why: str) -> None:
        if informer in self.whole:
            self.whole[informer].append(why)

    def all_whole(self, why: str, but: str | None = None) -> None:
        for name in self.whole:
            if name != but:
                self.whole[name].append(why)

    def result(self) -> dict[str, InformerReads]:
        return {name: InformerReads(frozenset(self.paths[name]),
                                    tuple(dict.fromkeys(self.whole[name])))  # once each
                for name in self.paths}


def informer_reads(config: Config, engine: Any, pm: Any) -> dict[str, InformerReads]:
    """Per informer of ``config``, what its readers read (module docstring). ``engine``: the
    plan's TemplateEngine (parses templates); ``pm``: the plugin manager (event hooks and
    index functions make whole reads)."""
    acc = _Reads(config.informers)
    for spec in config.controllers:
        _controller_reads(acc, config, spec, engine)
    for name, informer in config.informers.items():
        _informer_reads(acc, name, informer, engine)
    _admission_reads(acc, config, engine)
    _plugin_reads(acc, pm)
    return acc.result()


def projection_for(spec: InformerSpec, found: InformerReads) -> Projection | None:
    """The informer's Projection, or None when it caches whole objects: ``projection: off``,
    a metadata-only informer (the server sends less still), or a whole read."""
    if spec.projection == "off" or spec.metadata_only or found.whole:
        return None
    return Projection(found.paths,
                      keep_managed_fields=not spec.transform.strip_managed_fields)


_TYPICAL_META = {
    "name": "web-5d8f7c9b6d-x2k4p", "generateName": "web-5d8f7c9b6d-",
    "namespace": "default", "uid": "0f6a3c52-8f6d-4d3e-9d1c-2b7e5a9c1f00",
    "resourceVersion": "123456", "creationTimestamp": "2026-01-01T00:00:00Z",
    "labels": {"app": "web", "pod-template-hash": "5d8f7c9b6d", "team": "a"},
    "annotations": {"prometheus.io/scrape": "true", "prometheus.io/port": "9090"},
    "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web-5d8f7c9b6d",
                         "uid": "0f6a3c52-8f6d-4d3e-9d1c-2b7e5a9c1f01", "controller": True,
                         "blockOwnerDeletion": True}]}
"""A typical object's metadata (a Deployment's Pod) for :func:`estimated_bytes`."""


def estimated_bytes(projection: Projection, copies: int = 64) -> int:
    """An estimate of the bytes one projected object holds (as tracemalloc counts them): the
    projection's decode of ``copies`` objects with a typical ``metadata`` (``_TYPICAL_META``)
    and a 16-character string where each kept path ends (a whole ``spec.containers`` counts
    as one: the real figure grows with what those values hold), measured."""
    import tracemalloc

    obj: dict[str, Any] = {"apiVersion": "v1", "kind": "Pod", "metadata": dict(_TYPICAL_META)}
    for path in projection.paths:
        node = obj
        for step in path[:-1]:
            if step != ITEMS:
                node = node.setdefault(step, {}) if isinstance(node.get(step, {}), dict) else {}
        if path[-1] != ITEMS and path[0] != "metadata":
            node.setdefault(path[-1], "x" * 16)
    data = [orjson.dumps({**obj, "metadata": {**obj["metadata"], "name": f"pod-{i:05d}",
                                              "uid": f"{i:036d}"}}) for i in range(copies)]
    tracing = tracemalloc.is_tracing()
    if not tracing:
        tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        kept = [projection.loads_object(one) for one in data]
        size = (tracemalloc.get_traced_memory()[0] - before) // copies
    finally:
        if not tracing:
            tracemalloc.stop()
    del kept
    return size


def kept_description(informer: Any) -> str:
    """What an InformerPlan's cache keeps, for ``validate --explain``."""
    spec, projection = informer.spec, informer.projection
    if projection is not None:
        fields = sorted(shown(p) for p in projection.paths
                        if p[0] not in ("apiVersion", "kind", "metadata"))
        meta = sorted(p[1] for p in projection.paths if p[0] == "metadata" and len(p) > 1)
        whole_meta = ("metadata",) in projection.paths
        metadata = "metadata (all of it)" if whole_meta else \
            f"metadata ({', '.join(['name, namespace, uid, labels, owners, finalizers', *meta])})"
        return (f"apiVersion, kind, {metadata}, {', '.join(fields) or '-'}"
                f" (projection: auto; about {estimated_bytes(projection):,} bytes per object "
                "with a typical Pod's metadata, more where a kept value is large)")
    if spec.metadata_only:
        return "apiVersion, kind, metadata (metadataOnly)"
    if spec.projection == "off":
        return "whole objects (projection: off)"
    return "whole objects (read whole, see above)"


def declared_path(text: str) -> Path:
    """A ``reads:`` entry as a path: ``spec.containers[].image`` (or ``[0]``) ->
    ``("spec", "containers", "[]", "image")``."""
    out: list[str] = []
    for part in re.sub(r"\[\d+\]", "[]", text).split("."):
        bare = part.replace("[]", "")
        if bare:
            out.append(bare)
        out += [ITEMS] * part.count("[]")
    return tuple(out)


_NOT_RENDERED = ("name",)
"""An action's keys that are never rendered: its label (read as an expression, an action
named as a var read that var whole)."""


def reconcile_strings(spec: ControllerSpec) -> Iterator[tuple[str, bool, Location]]:
    """(source, is a var's expression, location) of every string a controller's reconcile
    holds (vars, every action list's strings but their ``_NOT_RENDERED`` keys,
    ``finalizer.when``)."""
    rec = spec.reconcile
    for var in rec.vars:
        yield var.expression, True, var.location
    for action in rec.every_action:
        rendered = {k: v for k, v in action.raw.items() if k not in _NOT_RENDERED}
        for text in template_strings(rendered):
            yield text, False, action.location
    if spec.finalizer_when:
        yield spec.finalizer_when, False, spec.location


def _controller_reads(acc: _Reads, config: Config, spec: ControllerSpec, engine: Any) -> None:
    aliases, values = _aliases(spec, engine)
    for var in spec.reconcile.vars:  # an alias var's own expression: not the object
        if var.name in values:
            _add(acc, alias_reads(values[var.name], spec.primary, aliases), var.location)
        else:  # each var by its name: two vars of one text may differ (one shadowed)
            _source_reads(acc, engine, var.expression, spec.primary, aliases, var.location)
    for text, is_var, loc in reconcile_strings(spec):
        if not is_var:
            _source_reads(acc, engine, text, spec.primary, aliases, loc)
    for watch in spec.watches:
        if watch.template:
            _source_reads(acc, engine, watch.template, watch.informer, {}, watch.location)
    rec = spec.reconcile
    if rec.hooks:
        if rec.reads is None:
            acc.all_whole(f"controller {spec.name} runs hooks that declare no reads:")
        else:
            for text in rec.reads:
                acc.path(spec.primary, declared_path(text))
            acc.all_whole(f"controller {spec.name}'s hooks may read any lister",
                          but=spec.primary)
    if "annotationsChanged" in spec.predicates:
        acc.path(spec.primary, ("metadata", "annotations"))
    for action in rec.every_action:
        if action.plugin:
            acc.all_whole(f"plugin action {action.kind} at {action.location}")
        elif action.kind == "status":
            acc.path(spec.primary, ("status",))
        elif action.kind in ("applySet", "children"):  # the parent's ApplySet annotations
            acc.path(spec.primary, ("metadata", "annotations"))
        if action.kind == "children" and not action.plugin:
            for watch in spec.watches:  # the child informers: drift compares whole objects
                if (config.informers[watch.informer].label_selector or "").startswith(
                        "applyset.kubernetes.io/part-of"):
                    acc.whole_of(watch.informer, f"children of controller {spec.name}")


def _informer_reads(acc: _Reads, name: str, spec: InformerSpec, engine: Any) -> None:
    """An informer's own readers: its indexes, its field selector's keys, and, for Secrets,
    kinrun's redaction (``kinrun.redact.secret_values`` reads ``data`` and ``stringData``)."""
    if spec.api_version == "v1" and (spec.kind == "Secret" or spec.resource == "secrets"):
        acc.path(name, ("data",))
        acc.path(name, ("stringData",))
    for index in spec.indexers.values():
        if index.plugin:
            acc.whole_of(name, f"plugin index {index.name}")
        elif index.expression:
            _source_reads(acc, engine, index.expression, name, {}, index.location)
    for term in (spec.field_selector or "").split(","):
        key = term.replace("!=", "=").split("=")[0].strip()
        if key:
            acc.path(name, tuple(key.split(".")))


def _admission_reads(acc: _Reads, config: Config, engine: Any) -> None:
    if config.admission is None:
        return
    for hook in config.admission.webhooks:
        for rule in (*hook.validate, *hook.mutate):
            for text in (rule.when, rule.deny, rule.field, rule.warn, rule.merge_patch,
                         rule.json_patch):
                if text:
                    _source_reads(acc, engine, text, None, {}, rule.location)


def _plugin_reads(acc: _Reads, pm: Any) -> None:
    """Plugins' event hooks see every informer's objects; their index functions (listed in
    the config or not) see their informer's."""
    from kinrun.plugin_manager import event_hooks_implemented

    if pm is None:
        return
    if event_hooks_implemented(pm):
        acc.all_whole("a plugin implements event hooks (kinrun_on_add/update/delete)")
    for name in context_filters(pm):
        acc.all_whole(f"plugin template filter {name} is given the template's context "
                      "(pass_context: it can read obj, old and the lookups)")
    if pm.hook.kinrun_index_funcs.get_hookimpls():
        for name in acc.whole:
            if any(pm.hook.kinrun_index_funcs(informer=name)):
                acc.whole_of(name, "a plugin's index functions (kinrun_index_funcs)")


_PASS_CONTEXT = jinja2.pass_context(lambda *args: None).jinja_pass_arg  # type: ignore[attr-defined]
"""The marker ``jinja2.pass_context`` puts on a function (Jinja2's public way to read it)."""


def context_filters(pm: Any) -> list[str]:
    """The plugin template filters marked ``jinja2.pass_context``: they are given the whole
    template context (``obj``, ``old``, ``get``...), whose reads no template shows."""
    from kinrun.actions import plugin_template_filters

    return sorted(name for name, func in plugin_template_filters(pm).items()
                  if getattr(func, "jinja_pass_arg", None) is _PASS_CONTEXT)


def _source_reads(acc: _Reads, engine: Any, text: str, primary: str | None,
                  aliases: Mapping[str, str], loc: Location) -> None:
    """One string's reads (``kinrun.cache_reads``), as a template and as an expression
    (module docstring)."""
    trees = [engine.syntax_tree(text, expression=True)]
    if "{{" in text or "{%" in text:
        trees.append(engine.syntax_tree(text))
    for tree in trees:
        if tree is not None:
            _add(acc, cache_reads(tree, primary, aliases), loc)


def _add(acc: _Reads, found: CacheReads, loc: Location) -> None:
    for informer, paths in found.paths.items():
        for path in paths:
            if informer == EVERY:
                acc.all_whole(f"a lookup whose informer is not written out at {loc}")
            else:
                acc.path(informer, path)
    for informer, how, line in found.whole:
        at = f"{how} at {loc.file}:{(loc.line or 1) + line - 1}"
        if informer == EVERY:
            acc.all_whole(at)
        else:
            acc.whole_of(informer, at)


def _aliases(spec: ControllerSpec, engine: Any
             ) -> tuple[dict[str, str], dict[str, nodes.Node]]:
    """The controller's vars that stand for a cached object (``kinrun.cache_reads.alias_of``:
    ``deploy: get('deployments', key) if name else none``, ``o: obj``) -> informer, unless a
    template binds that name somewhere (a loop variable or ``set`` of the same name would
    shadow it); and, per such var, its expression (whose own reads are the lookup's
    arguments and the condition: ``kinrun.cache_reads.alias_reads``)."""
    trees = [t for text, _, _ in reconcile_strings(spec)
             for t in (engine.syntax_tree(text, expression=True), engine.syntax_tree(text))
             if t is not None]
    shadowed = {name for tree in trees for name in bound_names(tree)}
    aliases: dict[str, str] = {}
    values: dict[str, nodes.Node] = {}
    for var in spec.reconcile.vars:
        value = engine.value_node(var.expression)  # None: a template, its value is text
        if var.name in shadowed or value is None:
            continue
        informer = alias_of(value, spec.primary, aliases)
        if informer is not None:
            aliases[var.name], values[var.name] = informer, value
    return aliases, values
