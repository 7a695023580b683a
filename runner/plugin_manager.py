"""Finding, loading and calling kinrun plugins (pluggy).

Where plugins come from, in registration order:

1. the config's ``plugins:`` list: module names (``kinrun.plugins.pod_logger``) or file paths
   (``./hooks.py``, relative to the config file's folder). A file is imported under a stable,
   unique module name derived from its resolved path (``kinrun_plugin_<stem>_<hash>``), so two
   ``hooks.py`` in different folders never clash and loading the same file twice reuses it.
   Each is registered under its spec exactly as written: that is the name a controller's
   ``reconcile: {hooks: [...]}`` uses.
2. installed distributions' entry points in the group ``kinrun`` (third-party plugins, like
   pytest's ``pytest11``), registered under the entry point's name. Built-in modules
   (``kinrun.plugins.*``) are never activated this way, even if an entry point names them: a
   built-in such as ``pod_logger`` acts on every key it sees, so it runs only when the config
   lists it.

Every hook implementation is validated against :mod:`kinrun.hooks` at registration (pluggy
compares parameter names); any problem is a :class:`kinrun.errors.ConfigError` naming the plugin.

Also here: small callers the runtime needs around ``pm.hook`` (the reconcile subset of a
controller, merged index functions, an informer event-handler adapter, a shutdown that logs).
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.metadata
import importlib.util
import logging
import re
import sys
import traceback
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

import orjson
import pluggy

from kinrun import hooks
from kinrun.cache.store import DeletedFinalStateUnknown
from kinrun.clock import REAL_CLOCK, Clock
from kinrun.errors import ConfigError, KinrunError
from kinrun.kube.projection import ProjectedObject
from kinrun.result import hook_delay, smallest_delay
from kinrun.templating import RateLimitedWarner, index_values

ENTRY_POINT_GROUP = "kinrun"
BUILTIN_PACKAGE = "kinrun.plugins"

_log = logging.getLogger("kinrun.plugin_manager")


class KinrunPluginManager(pluggy.PluginManager):
    """A pluggy PluginManager for project ``kinrun`` with the kinrun hookspecs added, which also
    remembers where each plugin came from (``sources``: plugin name -> description).

    Registration is not thread-safe (do it at start-up); calling hooks is as thread-safe as the
    plugins are.
    """

    def __init__(self) -> None:
        super().__init__(hooks.PROJECT_NAME)
        self.add_hookspecs(hooks)
        self.sources: dict[str, str] = {}   # plugin name -> "module m", "file /p", "entry point e"


def new_plugin_manager() -> KinrunPluginManager:
    """An empty manager with the kinrun hookspecs (for tests and embedding)."""
    return KinrunPluginManager()


def config_plugins(config: Any) -> KinrunPluginManager:
    """The plugin manager of a ``kinrun.config.Config``: :func:`load_plugins` of its
    ``plugins:``, relative to its folder, errors at each entry's place in its file
    (``plugins[i]``, line and column). Raises ConfigError as :func:`load_plugins`."""
    return load_plugins(list(config.plugins), config.base_dir, config_file=config.file,
                        locations=config.plugin_locations)


def load_plugins(specs: Sequence[str], base_dir: Path | str, *, entry_points: bool = True,
                 config_file: str = "<config>", locations: Sequence[Any] = ()
                 ) -> KinrunPluginManager:
    """Build the plugin manager for a config.

    ``specs``: the config's ``plugins:`` entries: a dotted module name, or a file path (contains
    ``/`` or ends in ``.py``) relative to ``base_dir`` (the config file's folder).
    ``entry_points``: also load the ``kinrun`` entry-point group (third-party plugins; built-ins
    excluded, see the module docstring). ``config_file`` only labels errors; ``locations``:
    each spec's place in it (``Config.plugin_locations``: their line and column in errors).

    Raises ConfigError (path ``plugins[i]``) for a missing module or file, a module that fails to
    import (with the exception and the file:line it was raised at), a plugin listed twice, and
    hook implementations that do not match a hookspec (unknown ``kinrun_*`` name, unknown
    parameter).
    """
    pm = KinrunPluginManager()
    base = Path(base_dir)
    for index, spec in enumerate(specs):
        where = _where(config_file, index, locations)
        module, source = _import_spec(str(spec), base, where)
        _register(pm, module, str(spec), source, where)
    if entry_points:
        _load_entry_points(pm, config_file)
    try:
        pm.check_pending()
    except pluggy.PluginValidationError as exc:
        name = pm.get_name(exc.plugin) or repr(exc.plugin)
        where = _where(config_file, list(specs).index(name), locations) if name in specs \
            else {"file": config_file, "path": "plugins"}
        raise ConfigError(f"plugin {name!r}: {_one_line(exc)}", **where) from exc
    return pm


def _where(config_file: str, index: int, locations: Sequence[Any]) -> dict[str, Any]:
    """The ConfigError arguments naming ``plugins[index]`` (its line and column when
    ``locations`` has them)."""
    loc = locations[index] if index < len(locations) else None
    return {"file": config_file, "path": f"plugins[{index}]",
            "line": getattr(loc, "line", None), "column": getattr(loc, "column", None)}


def _is_file_spec(spec: str) -> bool:
    return "/" in spec or "\\" in spec or spec.endswith(".py")


def _import_spec(spec: str, base: Path, where: Mapping[str, Any]) -> tuple[ModuleType, str]:
    if _is_file_spec(spec):
        path = (base / spec).resolve()
        return _import_file(spec, path, where), f"file {path}"
    return _import_module(spec, where), f"module {spec}"


def _import_module(spec: str, where: Mapping[str, Any]) -> ModuleType:
    try:
        return importlib.import_module(spec)
    except ModuleNotFoundError as exc:
        if exc.name and (spec == exc.name or spec.startswith(exc.name + ".")):
            raise ConfigError(f"plugin module {spec!r} not found", **where) from exc
        raise ConfigError(f"plugin {spec!r} failed to import: {_describe_exc(exc)}",
                          **where) from exc
    except BaseException as exc:  # noqa: BLE001 - any import-time failure of user code,
        # sys.exit() and KeyboardInterrupt included: kinrun would end with no message
        raise ConfigError(f"plugin {spec!r} failed to import: {_describe_exc(exc)}",
                          **where) from None


def file_digest(path: Path) -> str | None:
    """The SHA-256 (hex) of a plugin file's bytes, None when unreadable. A file whose digest
    changed since it was imported is imported again by the next ``load_plugins`` (hot reload:
    ``kinrun.reload``); the module object of the version in force is left to those who hold
    it, so two versions are never mixed within one plugin manager."""
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError:
        return None


def plugin_digests(pm: Any) -> dict[str, str | None]:
    """Plugin name -> the digest of the file it was imported from (None: a module or entry
    point, which is never re-imported), for every plugin ``pm`` registered."""
    out: dict[str, str | None] = {}
    for name, source in getattr(pm, "sources", {}).items():
        plugin = pm.get_plugin(name)
        out[name] = getattr(plugin, "__kinrun_digest__", None) if source.startswith("file ") \
            else None
    return out


def file_module_name(path: Path) -> str:
    """The stable unique module name a plugin file is imported under."""
    stem = re.sub(r"\W", "_", path.stem) or "plugin"
    digest = hashlib.sha1(str(path).encode()).hexdigest()[:10]
    return f"kinrun_plugin_{stem}_{digest}"


def _import_file(spec: str, path: Path, where: Mapping[str, Any]) -> ModuleType:
    if not path.is_file():
        raise ConfigError(f"plugin file {spec!r} not found (looked for {path})", **where)
    name = file_module_name(path)
    digest = file_digest(path)
    loaded = sys.modules.get(name)
    if loaded is not None and getattr(loaded, "__kinrun_digest__", digest) == digest:
        return loaded  # unchanged since it was imported: the same module
    module_spec = importlib.util.spec_from_file_location(name, path)
    if module_spec is None or module_spec.loader is None:
        raise ConfigError(f"plugin file {spec!r} cannot be imported (not a Python file?)",
                          **where)
    module = importlib.util.module_from_spec(module_spec)
    module.__kinrun_digest__ = digest  # type: ignore[attr-defined]
    sys.modules[name] = module
    try:
        module_spec.loader.exec_module(module)
    except BaseException as exc:
        if loaded is not None:
            sys.modules[name] = loaded  # the version in force stays
        else:
            del sys.modules[name]
        raise ConfigError(f"plugin {spec!r} failed to import: {_describe_exc(exc)}",
                          **where) from None  # SystemExit too: a plugin cannot end kinrun
    return module


def _one_line(exc: BaseException) -> str:
    return "; ".join(line.strip() for line in str(exc).splitlines() if line.strip())


def _describe_exc(exc: BaseException) -> str:
    """``Type: message (file:line)``, the line being where the error was raised (or, for a
    SyntaxError, the offending line)."""
    text = f"{type(exc).__name__}: {exc}"
    if isinstance(exc, SyntaxError) and exc.filename:
        return f"{type(exc).__name__}: {exc.msg} ({exc.filename}:{exc.lineno})"
    frames = traceback.extract_tb(exc.__traceback__)
    frames = [f for f in frames if "importlib" not in f.filename] or frames
    if frames:
        text += f" ({frames[-1].filename}:{frames[-1].lineno})"
    return text


def _register(pm: KinrunPluginManager, plugin: Any, name: str, source: str,
              where: Mapping[str, Any]) -> None:
    if pm.is_registered(plugin) or pm.has_plugin(name):
        other = pm.get_name(plugin) or name
        raise ConfigError(f"plugin {name!r} is listed twice (already loaded as {other!r})",
                          **where)
    try:
        pm.register(plugin, name=name)
    except pluggy.PluginValidationError as exc:
        raise ConfigError(f"plugin {name!r} has an invalid hook implementation: "
                          f"{_one_line(exc)}", **where) from exc
    pm.sources[name] = source
    unknown = sorted(c.name for c in pm.get_hookcallers(plugin) or [] if not c.has_spec()
                     and any(not i.optionalhook for i in c.get_hookimpls() if i.plugin is plugin))
    if unknown:
        pm.unregister(plugin)
        del pm.sources[name]
        raise ConfigError(f"plugin {name!r}: unknown hook {unknown[0]!r} (kinrun's hooks: "
                          f"{', '.join(hooks.HOOK_NAMES)})", **where)


def _load_entry_points(pm: KinrunPluginManager, config_file: str) -> None:
    for ep in sorted(importlib.metadata.entry_points(group=ENTRY_POINT_GROUP),
                     key=lambda e: e.name):
        module_name = ep.value.split(":", 1)[0].strip()
        if module_name == BUILTIN_PACKAGE or module_name.startswith(BUILTIN_PACKAGE + "."):
            continue
        where = {"file": config_file, "path": f"entry point {ep.name} = {ep.value}"}
        try:
            plugin = ep.load()
        except Exception as exc:  # noqa: BLE001
            raise ConfigError(f"plugin entry point {ep.name!r} ({ep.value}) failed to load: "
                              f"{_describe_exc(exc)}", **where) from exc
        if pm.is_registered(plugin):
            continue
        dist = getattr(ep, "dist", None)
        label = f" from {dist.name} {dist.version}" if dist is not None else ""
        _register(pm, plugin, ep.name, f"entry point {ep.value}{label}", where)


# --- describing ------------------------------------------------------------------------------


def describe_plugins(pm: pluggy.PluginManager) -> list[tuple[str, str, list[str]]]:
    """``(name, source, [hook names])`` per registered plugin, in registration order, for
    ``kinrun plugins CONFIG``. ``source`` says where it came from (module, file, entry point)."""
    sources = getattr(pm, "sources", {})
    out = []
    for name, plugin in pm.list_name_plugin():
        callers = pm.get_hookcallers(plugin) or []
        out.append((name, sources.get(name, repr(plugin)), sorted(c.name for c in callers)))
    return out


# --- calling ---------------------------------------------------------------------------------


def combine_delays(results: Iterable[Any]) -> float | None:
    """The smallest requeue delay (seconds) among hook results (``kinrun.result.hook_delay``:
    None, seconds >= 0, or a ``kinrun.Result``); None when none asks for one. Raises
    ValueError for a result that is none of those, a failed Result's error."""
    return smallest_delay(hook_delay(value) for value in results)


ReconcileHook = Callable[..., "float | None"]


def reconcile_caller(pm: pluggy.PluginManager, selection: bool | Sequence[str] | None,
                     projected: frozenset[str] = frozenset(),
                     primary: str = "") -> ReconcileHook | None:
    """A function ``(controller, key, obj, ctx) -> float | None`` calling ``kinrun_reconcile``
    on the plugins a controller's ``reconcile.hooks`` selects (True: all; a list: those plugin
    names; False/None/[]: none -> returns None). ``projected``: the informers whose caches
    are projected, ``primary`` the reconciled objects' (their objects, ``obj`` and
    ``ctx.old`` too, are given as ``ProjectedObject``: kinrun's client refuses to write one
    whole). Results combine with :func:`combine_delays`;
    exceptions propagate (PermanentError, TemporaryError, others). Unknown names, or no selected
    plugin implementing ``kinrun_reconcile``: ConfigError.
    """
    if not selection:
        return None
    caller = _selected_caller(pm, selection)

    def call(controller: str, key: str, obj: dict | None, ctx: hooks.ReconcileContext
             ) -> float | None:
        try:
            return combine_delays(caller(controller=controller, key=key,
                                         obj=private_copy(obj, primary in projected),
                                         ctx=private_context(ctx, projected, primary)))
        except (SystemExit, KeyboardInterrupt, GeneratorExit) as exc:
            raise HookExited("kinrun_reconcile", exc) from None
        except Exception as exc:
            scrub_secret_values(exc, obj, ctx.old)
            raise
    call.plugins = tuple(impl.plugin_name for impl in caller.get_hookimpls())  # type: ignore[attr-defined]
    return call


def _selected_caller(pm: pluggy.PluginManager, selection: bool | Sequence[str]) -> Any:
    """``kinrun_reconcile``'s caller over the plugins ``selection`` names (True: all).
    ConfigError for an unknown name, or when none of them implements the hook."""
    if selection is True:
        caller = pm.hook.kinrun_reconcile
    else:
        names = list(selection)  # type: ignore[arg-type]
        unknown = [n for n in names if not pm.has_plugin(n)]
        if unknown:
            known = ", ".join(n for n, _ in pm.list_name_plugin()) or "none"
            raise ConfigError(f"reconcile.hooks names unknown plugin(s) {', '.join(unknown)} "
                              f"(loaded: {known})")
        keep = {id(pm.get_plugin(n)) for n in names}
        others = [p for p in pm.get_plugins() if id(p) not in keep]
        caller = pm.subset_hook_caller("kinrun_reconcile", others)
    if not caller.get_hookimpls():
        raise ConfigError("reconcile.hooks is set but no plugin it selects implements "
                          "kinrun_reconcile (list one under plugins:)")
    return caller


class HookExited(KinrunError):
    """A hook raised ``SystemExit``, ``KeyboardInterrupt`` or ``GeneratorExit``: a reconcile
    error of that key (retried with backoff), never the end of a worker or of kinrun."""

    def __init__(self, hook: str, exc: BaseException) -> None:
        super().__init__(f"{hook} raised {type(exc).__name__}"
                         + (f"({exc.args[0]!r})" if exc.args and isinstance(exc.args[0], int)
                            else "") + ": a hook cannot stop kinrun")
        self.hook = hook


def scrub_secret_values(exc: BaseException, *objs: Any) -> None:
    """Replace, in place, every value of the core/v1 Secrets among ``objs`` (as stored and
    base64-decoded, 4 characters or more: ``kinrun.redact.secret_values``) found in
    the string arguments of ``exc`` and of its ``__cause__``/``__context__`` chain by
    ``<redacted>``: kinrun's retry and drop lines and the
    traceback it logs repeat a hook's exception message. A value the hook transformed before
    quoting it is not recognised (docs/secrets.md says so)."""
    from kinrun.redact import redact_text, secret_values

    values = secret_values(*objs)
    seen: set[int] = set()
    while values and exc is not None and id(exc) not in seen:  # the chain a traceback prints
        seen.add(id(exc))
        exc.args = tuple(redact_text(a, values) if isinstance(a, str) else a for a in exc.args)
        exc = exc.__cause__ or exc.__context__


def private_copy(obj: Any, projected: bool = False) -> Any:
    """What a plugin is given instead of a cached object: a copy of ``obj`` (a dict, or a list
    of dicts; a tombstone's last state) made by a JSON round trip (orjson), so that nothing a
    plugin does to it reaches the informer cache, whose objects are shared and read-only.
    Costs about 1.6x the decode of the same object from JSON (``benchmarks/hook_copy.py``: 23
    against 14 us for the benchmark's Pod), per object a plugin is given or reads, so once per
    hook call, not per event; None and other values pass unchanged. ``projected``: ``obj`` is
    from a projected cache: the copy is a ``ProjectedObject``, which kinrun's client refuses
    to write whole (``kinrun.kube.projection``)."""
    if isinstance(obj, dict):
        copy = orjson.loads(orjson.dumps(obj))
        return ProjectedObject(copy) if projected else copy
    if isinstance(obj, list):
        return [private_copy(o, projected) for o in obj]
    if isinstance(obj, DeletedFinalStateUnknown):
        return DeletedFinalStateUnknown(obj.key, private_copy(obj.obj, projected))
    return obj


class _Copying:
    """A lister or indexer whose answers (objects, lists of objects) are private copies
    (:func:`private_copy`; ``projected``: ProjectedObjects); every other attribute passes
    through."""

    __slots__ = ("_inner", "_projected")

    def __init__(self, inner: Any, projected: bool = False) -> None:
        self._inner, self._projected = inner, projected

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._inner, name)
        if not callable(attr):
            return attr

        def copied(*args: Any, **kwargs: Any) -> Any:
            return private_copy(attr(*args, **kwargs), self._projected)
        return copied


class _CopyingMap(Mapping[str, Any]):
    """name -> :class:`_Copying` of the mapping's value, made on lookup; the names in
    ``projected`` hold projected caches."""

    def __init__(self, inner: Mapping[str, Any], projected: frozenset[str] = frozenset()
                 ) -> None:
        self._inner, self._projected = inner, projected

    def __getitem__(self, name: str) -> Any:
        return _Copying(self._inner[name], name in self._projected)

    def __iter__(self) -> Any:
        return iter(self._inner)

    def __len__(self) -> int:
        return len(self._inner)


def private_context(ctx: hooks.ReconcileContext, projected: frozenset[str] = frozenset(),
                    primary: str = "") -> hooks.ReconcileContext:
    """``ctx`` as a hook gets it: ``old`` a private copy, the listers' and indexers' answers
    private copies (on use: a hook that reads nothing pays nothing). Every other field carried
    over: its ``__dict__`` filled in one C call from ``ctx``'s, as ``Reconciler._context``
    builds contexts (about 0.8 against 2.4 us for ``dataclasses.replace``, per reconcile).
    ``projected``: the informers whose caches are projected (their objects are given as
    ``ProjectedObject``); ``primary``: the reconciled objects' informer."""
    hook_ctx = object.__new__(hooks.ReconcileContext)
    fields = hook_ctx.__dict__
    fields.update(ctx.__dict__)
    fields["old"] = private_copy(ctx.old, primary in projected)
    fields["listers"] = _CopyingMap(ctx.listers, projected)
    fields["indexers"] = _CopyingMap(ctx.indexers, projected)
    return hook_ctx


def collect_index_funcs(pm: pluggy.PluginManager, informer: str) -> dict[str, hooks.IndexFunc]:
    """Merge every plugin's ``kinrun_index_funcs(informer=...)``, each wrapped by
    :func:`safe_index_func`; a name supplied twice or a non-callable is a ConfigError."""
    merged: dict[str, hooks.IndexFunc] = {}
    for answer in pm.hook.kinrun_index_funcs(informer=informer):
        for name, func in (answer or {}).items():
            if name in merged:
                raise ConfigError(f"informer {informer!r}: two plugins supply index {name!r}")
            if not callable(func):
                raise ConfigError(f"informer {informer!r}: index {name!r} is not callable")
            merged[name] = safe_index_func(func, f"informer {informer!r} index {name!r}")
    return merged


def safe_index_func(func: Callable[[dict], Any], label: str,
                    logger: logging.Logger | None = None) -> hooks.IndexFunc:
    """Wrap a plugin's index function so it can never break the store: its result is normalised
    (:func:`kinrun.templating.index_values`: str -> [str], None -> []) and an exception files the
    object under no value, with a warning logged at most once a minute per index."""
    warner = RateLimitedWarner(logger or _log)

    def index(obj: dict) -> list[str]:
        try:
            return index_values(func(private_copy(obj)))  # the object is about to be cached
        except BaseException as exc:  # noqa: BLE001 - a plugin must not break the informer
            warner.warn("%s: index function failed: %s: %s", label, type(exc).__name__, exc)
            return []
    index.__wrapped__ = func  # type: ignore[attr-defined]
    return index


_EVENT_HOOKS = ("kinrun_on_add", "kinrun_on_update", "kinrun_on_delete")


class EventHookHandler:
    """A ResourceEventHandler (``on_add``/``on_update``/``on_delete``) that forwards an informer's
    notifications to the raw event hooks, with the informer's name.

    Exceptions from plugins are logged and swallowed: a plugin cannot stop an informer's
    dispatcher. Thread-safe if the plugins are (one dispatcher thread calls it per informer).
    """

    def __init__(self, pm: pluggy.PluginManager, informer: str,
                 logger: logging.Logger | None = None,
                 clock: Clock = REAL_CLOCK) -> None:
        self._hook = pm.hook
        self.informer = informer
        self._logger = logger or _log
        self._clock = clock
        self.running: tuple[str, str, float] | None = None  # (hook, key, since): set by _call

    def on_add(self, obj: Any, is_in_initial_list: bool = False) -> None:
        self._call("kinrun_on_add", obj, obj=private_copy(obj),
                   is_in_initial_list=is_in_initial_list)

    def on_update(self, old: Any, new: Any) -> None:
        self._call("kinrun_on_update", new, old=private_copy(old), new=private_copy(new))

    def on_delete(self, obj: Any) -> None:
        self._call("kinrun_on_delete", obj, obj=private_copy(obj))

    def busy(self) -> str | None:
        """What this handler is running now, as a line (``kinrun_on_add of ns/x for 31s``),
        or None: the initial-list wait names a hook that does not return."""
        running = self.running
        if running is None:
            return None
        hook, key, since = running
        return f"{hook} of {key} for {self._clock.now() - since:.0f}s"

    def _call(self, hook: str, about: Any, **kwargs: Any) -> None:
        self.running = (hook, _key_of(about), self._clock.now())
        try:
            getattr(self._hook, hook)(informer=self.informer, **kwargs)
        except BaseException as exc:  # noqa: BLE001 - logged; informers must go on (SystemExit too)
            scrub_secret_values(exc, *kwargs.values())
            self._logger.exception("plugin hook %s failed for informer %r", hook, self.informer)
        finally:
            self.running = None


def _key_of(obj: Any) -> str:
    """``namespace/name`` of an object or a tombstone's key, for messages."""
    if isinstance(obj, DeletedFinalStateUnknown):
        return obj.key
    meta = (obj or {}).get("metadata") or {} if isinstance(obj, dict) else {}
    return "/".join(p for p in (meta.get("namespace"), meta.get("name")) if p) or "?"


def event_hooks_implemented(pm: pluggy.PluginManager) -> bool:
    """Whether any plugin implements a raw event hook (``kinrun_on_add``/``_update``/
    ``_delete``): they see every informer's objects whole."""
    return any(getattr(pm.hook, h).get_hookimpls() for h in _EVENT_HOOKS)


def event_handler(pm: pluggy.PluginManager, informer: str,
                  logger: logging.Logger | None = None) -> EventHookHandler | None:
    """An :class:`EventHookHandler` for ``informer``, or None when no plugin implements any raw
    event hook (so the informer does not pay for a listener nobody uses)."""
    if not event_hooks_implemented(pm):
        return None
    return EventHookHandler(pm, informer, logger)


class StartupError(KinrunError):
    """A plugin's ``kinrun_startup`` failed (start-up aborted: exit 1). ``not_started``: the
    names of that plugin and of those whose ``kinrun_startup`` was not called yet; their
    ``kinrun_shutdown`` is not called (``call_shutdown(skip=...)``)."""

    def __init__(self, message: str, not_started: frozenset[str]) -> None:
        super().__init__(message)
        self.not_started = not_started


def call_startup(pm: pluggy.PluginManager, **kwargs: Any) -> None:
    """Call every plugin's ``kinrun_startup(**kwargs)`` in pluggy's order. The first failure
    raises StartupError naming the plugin and the exception (the main job then stops cleanly
    instead of crashing with a traceback); the plugins after it are not called."""
    impls = list(reversed(pm.hook.kinrun_startup.get_hookimpls()))
    for done, impl in enumerate(impls):
        try:
            impl.function(**{name: kwargs[name] for name in impl.argnames})
        except Exception as exc:  # noqa: BLE001 - reported with the plugin's name
            raise StartupError(f"plugin {impl.plugin_name!r}: kinrun_startup failed: "
                               f"{type(exc).__name__}: {exc}",
                               frozenset(i.plugin_name for i in impls[done:])) from exc


def call_shutdown(pm: pluggy.PluginManager, logger: logging.Logger | None = None, *,
                  skip: frozenset[str] = frozenset()) -> None:
    """Call every plugin's ``kinrun_shutdown`` but those of the plugins named in ``skip`` (a
    failed start-up's ``StartupError.not_started``); each failure is logged, the others still
    run."""
    for impl in reversed(pm.hook.kinrun_shutdown.get_hookimpls()):
        if impl.plugin_name in skip:
            continue
        try:
            impl.function()
        except Exception:  # noqa: BLE001
            (logger or _log).exception("plugin %r: kinrun_shutdown failed", impl.plugin_name)


__all__ = [
    "BUILTIN_PACKAGE", "ENTRY_POINT_GROUP", "EventHookHandler", "KinrunPluginManager",
    "StartupError", "call_shutdown", "call_startup", "collect_index_funcs", "combine_delays",
    "config_plugins", "describe_plugins", "event_handler", "file_module_name", "load_plugins",
    "new_plugin_manager", "reconcile_caller", "safe_index_func",
]
