"""Cross-reference checks the schema cannot express.

Run on schema-valid data (:func:`check_references`); each problem becomes a located
ConfigError. Checked: a controller's ``for`` and ``watches[].informer`` name known informers;
``mapTo: {index: NAME}`` names an indexer of the primary informer; controller names are
unique; ``reconcile.hooks`` lists name loaded plugins; a ``plugin:`` action kind is not a built-in kind; plugin file paths exist (resolved against the config file's folder); a reconcile does
something (hooks or actions); rate limiter ``baseDelay <= maxDelay``; leader election
and sharding ``leaseDuration > renewDeadline > retryPeriod``.
"""

from __future__ import annotations

import difflib
import importlib.metadata
from pathlib import Path
from typing import Any

from kinrun.durations import parse_duration
from kinrun.selectors import SelectorError, parse_field_selector, parse_label_selector
from kinrun.config.loader import LoadedYaml, PathKey
from kinrun.config.model import BUILTIN_ACTION_KINDS
from kinrun.config.paths import is_plugin_path, resolve_path
from kinrun.config.schema import default, locate
from kinrun.errors import ConfigError


def check_references(loaded: LoadedYaml, base_dir: Path) -> list[ConfigError]:
    """All cross-reference errors of schema-valid ``loaded.data``."""
    data = loaded.data
    errors: list[ConfigError] = []
    errors += _check_plugins(loaded, data.get("plugins") or [], base_dir)
    informers = data.get("informers") or {}
    seen: dict[str, int] = {}
    for i, controller in enumerate(data.get("controllers") or []):
        base: PathKey = ("controllers", i)
        name = controller["name"]
        if name in seen:
            first = loaded.marks[("controllers", seen[name], "name")].line + 1
            errors.append(locate(loaded, base + ("name",), f"duplicate controller name {name!r} "
                                 f"(first at line {first}, controllers[{seen[name]}])"))
        seen.setdefault(name, i)
        errors += _check_controller(loaded, base, controller, informers)
    errors += _check_hook_plugins(loaded, data)
    errors += _check_leader_election(loaded, data.get("leaderElection"))
    errors += _check_leader_election(loaded, data.get("sharding"), ("sharding",))
    errors += _check_selectors(loaded, informers)
    admission = data.get("admission")
    if admission and not admission.get("webhooks") \
            and not (data.get("sharding") or {}).get("admission"):
        errors.append(locate(loaded, ("admission",), "no webhooks to serve: add webhooks, or "
                             "set sharding.admission (the shard webhook)"))
    return errors


def _check_selectors(loaded: LoadedYaml, informers: dict[str, Any]) -> list[ConfigError]:
    """Label and field selectors the API server would refuse (400) are config errors."""
    errors = []
    for name, spec in informers.items():
        for key, parse in (("labelSelector", parse_label_selector),
                           ("fieldSelector", parse_field_selector)):
            try:
                parse(spec.get(key))
            except SelectorError as exc:
                errors.append(locate(loaded, ("informers", name, key), str(exc)))
    return errors


def entry_point_names() -> list[str]:
    """Names of the installed third-party ``kinrun`` entry points: plugin names besides the
    config's. Built-ins (``kinrun.plugins.*``) are left out: kinrun.plugin_manager only
    activates them when the config lists them."""
    return sorted({ep.name for ep in importlib.metadata.entry_points(group="kinrun")
                   if not ep.value.startswith("kinrun.plugins")})


def _check_hook_plugins(loaded: LoadedYaml, data: dict[str, Any]) -> list[ConfigError]:
    """``reconcile.hooks: [names]`` must name plugins: a ``plugins:`` entry exactly as written,
    or an installed ``kinrun`` entry point (the names kinrun.plugin_manager registers)."""
    errors: list[ConfigError] = []
    known: list[str] | None = None
    for i, controller in enumerate(data.get("controllers") or []):
        hooks = controller["reconcile"].get("hooks")
        for j, name in enumerate(hooks if isinstance(hooks, list) else []):
            known = known if known is not None else [*(data.get("plugins") or []), *entry_point_names()]
            if name not in known:
                errors.append(locate(loaded, ("controllers", i, "reconcile", "hooks", j),
                                     _unknown("plugin", name, known)))
    return errors


def _check_plugins(loaded: LoadedYaml, plugins: list[str], base_dir: Path) -> list[ConfigError]:
    errors = []
    for i, spec in enumerate(plugins):
        if is_plugin_path(spec) and not resolve_path(spec, base_dir).is_file():
            errors.append(locate(loaded, ("plugins", i), f"plugin file {spec!r} does not exist "
                                 f"(looked for {resolve_path(spec, base_dir)})"))
    return errors


def _unknown(kind: str, name: str, known: list[str]) -> str:
    close = difflib.get_close_matches(name, known, n=1)
    hint = f"did you mean {close[0]!r}? " if close else ""
    return f"unknown {kind} {name!r} ({hint}known: {', '.join(known) or 'none'})"


def _no_indexer(informer: str, name: str, indexers: list[str]) -> str:
    close = difflib.get_close_matches(name, indexers, n=1)
    hint = f"did you mean {close[0]!r}? " if close else ""
    return (f"informer {informer!r} has no indexer {name!r} "
            f"({hint}its indexers: {', '.join(indexers) or 'none'})")


def _check_controller(loaded: LoadedYaml, base: PathKey, controller: dict[str, Any],
                      informers: dict[str, Any]) -> list[ConfigError]:
    errors = []
    known = list(informers)
    primary = controller["for"]
    if primary not in informers:
        errors.append(locate(loaded, base + ("for",), _unknown("informer", primary, known)))
    for j, watch in enumerate(controller.get("watches") or []):
        if watch["informer"] not in informers:
            errors.append(locate(loaded, base + ("watches", j, "informer"),
                                 _unknown("informer", watch["informer"], known)))
        map_to = watch.get("mapTo")
        if isinstance(map_to, dict) and "index" in map_to and primary in informers:
            indexers = list(informers[primary].get("indexers") or {})
            if map_to["index"] not in indexers:
                errors.append(locate(loaded, base + ("watches", j, "mapTo", "index"),
                                     _no_indexer(primary, map_to["index"], indexers)))
    errors += _check_reconcile(loaded, base, controller)
    return errors


def _check_plugin_kinds(loaded: LoadedYaml, base: PathKey, reconcile: dict[str, Any]) -> list[ConfigError]:
    errors = []
    for list_name in ("actions", "onDelete", "finalize", "onError"):
        for k, action in enumerate(reconcile.get(list_name) or []):
            if action.get("plugin") in BUILTIN_ACTION_KINDS:
                errors.append(locate(loaded, base + (list_name, k, "plugin"),
                                     f"{action['plugin']!r} is a built-in action kind: write "
                                     f"{action['plugin']}: ... instead of plugin:"))
    return errors


def _check_reconcile(loaded: LoadedYaml, base: PathKey, controller: dict[str, Any]) -> list[ConfigError]:
    errors = []
    reconcile = controller["reconcile"]
    if not reconcile.get("hooks") and not reconcile.get("actions") \
            and not reconcile.get("onDelete") and not reconcile.get("finalize"):
        errors.append(locate(loaded, base + ("reconcile",),
                             "reconcile does nothing: set hooks: true, or give actions or onDelete"))
    errors += _check_plugin_kinds(loaded, base + ("reconcile",), reconcile)
    limiter = controller.get("rateLimiter") or {}
    if "baseDelay" in limiter and "maxDelay" in limiter and \
            parse_duration(limiter["baseDelay"]) > parse_duration(limiter["maxDelay"]):
        errors.append(locate(loaded, base + ("rateLimiter", "baseDelay"),
                             "baseDelay is greater than maxDelay"))
    return errors


def _check_leader_election(loaded: LoadedYaml, spec: dict[str, Any] | None,
                           base: PathKey = ("leaderElection",)) -> list[ConfigError]:
    """``leaseDuration > renewDeadline > retryPeriod`` (leaderElection, sharding)."""
    if not spec:
        return []
    lease, renew, retry = (parse_duration(spec.get(key, default(base[0], key)))
                           for key in ("leaseDuration", "renewDeadline", "retryPeriod"))
    if renew >= lease:
        return [locate(loaded, base + ("renewDeadline",),
                       f"renewDeadline ({renew:g}s) must be less than leaseDuration ({lease:g}s)")]
    if retry >= renew:
        return [locate(loaded, base + ("retryPeriod",),
                       f"retryPeriod ({retry:g}s) must be less than renewDeadline ({renew:g}s)")]
    return []
