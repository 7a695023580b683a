"""Hook specifications of kinrun plugins (pluggy, project name ``kinrun``).

A plugin is a module (or any object) whose functions carry ``@hookimpl`` and are named after one
of the hookspecs below. kinrun always calls hooks with keyword arguments only, so an
implementation may accept any subset of a hook's parameters, in any order (pluggy's rule)::

    from kinrun.hooks import hookimpl

    @hookimpl
    def kinrun_reconcile(key, obj):
        ...

Plugins are listed in the config's ``plugins:`` (module names or file paths) or installed as
``kinrun`` entry points; :func:`kinrun.plugin_manager.load_plugins` builds the manager and
validates every implementation against these specs at registration (a misspelt parameter or an
unknown ``kinrun_*`` hook is a ConfigError before anything runs).

Error contract of hooks that run per event or per key (``kinrun_reconcile`` and the raw event
hooks): raise :class:`kinrun.errors.PermanentError` to stop retrying the key,
:class:`kinrun.errors.TemporaryError` (``delay=`` seconds) to retry after a fixed delay; any other
exception is retried with the controller's rate limiter (exponential backoff), as client-go's
``AddRateLimited``. Hooks never see mutable cache objects: every object they receive is shared
and read-only (copy with ``orjson.loads(orjson.dumps(obj))`` before changing it).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

import pluggy

from kinrun.result import Cause, Result

if TYPE_CHECKING:  # types only: importing kinrun.hooks stays light
    from kinrun.cache.protocols import IndexReader
    from kinrun.kube import Client

PROJECT_NAME = "kinrun"

hookspec = pluggy.HookspecMarker(PROJECT_NAME)
hookimpl = pluggy.HookimplMarker(PROJECT_NAME)

Obj = dict[str, Any]
IndexFunc = Callable[[Obj], list[str]]


class ListerLike(Protocol):
    """The read-only view of one informer's cache that hooks and templates use.

    As client-go's generated listers over an Indexer: ``get(key)`` returns the object stored under
    ``namespace/name`` (or ``name`` for cluster-scoped objects) or None; ``list()`` every object;
    ``by_index(name, value)`` the objects whose index ``name`` holds ``value`` (unknown index:
    KeyError). Returned objects are shared and must not be modified.
    """

    def get(self, key: str) -> Obj | None: ...

    def list(self) -> list[Obj]: ...

    def by_index(self, index_name: str, value: str) -> list[Obj]: ...


@dataclass(frozen=True)
class ReconcileContext:
    """What one reconcile of one key can see, besides the object itself.

    Built by the controller per reconcile; immutable and cheap (it only holds references).

    Fields:
      ``controller``: the controller's name from the config.
      ``key``: the key being reconciled, ``namespace/name`` or ``name`` (cluster-scoped).
      ``listers``: informer name -> read-only lister (``get(key)``, ``list()``,
        ``by_index(index, value)``), for every informer of the config.
      ``client``: the :class:`kinrun.kube.Client` used to write. Under ``kinrun CONFIG
        --dry-run`` it is a Client with ``dry_run`` set: reads are real, writes are sent with
        ``dryRun=All`` (validated, persisted nowhere) and logged as what they would change.
        None only where nothing may be sent at all (a Reconciler built without a client).
      ``logger``: the controller's logger (``kinrun.controller.<name>``).
      ``old``: for a deletion (``obj`` None), the object's last known state; otherwise, when the
        controller keeps old versions (config ``reconcile.keepOld``; by default only when one of
        its actions uses ``old``), the object as this controller last reconciled it; else None.
        A reconcile must not depend on it: keys coalesce.
      ``indexers``: informer name -> the informer's Indexer, for callers that need more than the
        lister (e.g. ``index_keys``); may be empty.
      ``reason``: in a deletion (``obj`` None) why the object is gone: ``deleted`` (the server
        deleted it), ``left`` (it exists but no longer matches the informer's selectors) or
        ``unknown`` (a relist no longer found it); otherwise why the key was queued
        (``added``, ``updated``, ``resync``, ``mapped from INFORMER``, ``requeued``,
        ``retried``, ``scheduled``; "" when not recorded). See ``kinrun.reconcile`` for the rules.
      ``cause``: the same as structured data (a ``kinrun.reconcile.Cause``: ``kind``,
        ``informer``, ``initial_list``: an ``added`` from the informer's first list), or None.
    """

    controller: str
    key: str
    listers: Mapping[str, ListerLike] = field(default_factory=dict)
    client: Client | None = None
    logger: logging.Logger = field(default_factory=lambda: logging.getLogger("kinrun.controller"))
    old: Obj | None = None
    indexers: Mapping[str, IndexReader] = field(default_factory=dict)
    reason: str = ""
    cause: Cause | None = None


# --- reconcile -------------------------------------------------------------------------------


@hookspec
def kinrun_reconcile(controller: str, key: str, obj: Obj | None,
                     ctx: ReconcileContext) -> Result | float | None:
    """Bring the world in line with one object (step 9 of the pipeline).

    Called by a controller whose config says ``reconcile: {hooks: true}`` (every plugin) or
    ``hooks: [names...]`` (those plugins only), once per key taken from the workqueue, after the
    controller's actions (if any) were sent. A key is never reconciled by two workers at once.

    :param controller: the controller's name.
    :param key: ``namespace/name`` (or ``name`` for cluster-scoped objects).
    :param obj: the object as the informer's cache holds it now (read-only), or None when it does
        not exist any more (deleted; ``key`` still names it).
    :param ctx: a :class:`ReconcileContext` with the listers, indexers, API client and logger.
    :return: a :class:`kinrun.Result` (``Result.after(seconds)``: requeue after that delay, or
        done; ``Result("done")``; a ``retry``/``permanent`` Result fails the reconcile as
        raising its error would), or, as before, None when done or a delay in seconds after
        which the key is reconciled again (``requeueAfter``). When several plugins answer, the
        smallest delay wins (``kinrun.result.smallest_delay``).
    :raises kinrun.errors.PermanentError: do not retry this key until it changes again.
    :raises kinrun.errors.TemporaryError: retry after ``delay`` seconds.
    Any other exception is retried with backoff, up to the controller's ``maxRetries``.
    """


# --- raw informer events ---------------------------------------------------------------------


@hookspec
def kinrun_on_add(informer: str, obj: Obj, is_in_initial_list: bool) -> None:
    """An object was added to an informer's cache (client-go ``OnAdd``).

    Called from the informer's dispatcher thread for this plugin manager, in event order per
    informer; keep it quick (a slow hook delays later notifications of this informer, not others).
    Exceptions are logged and swallowed: event hooks cannot fail an informer.

    :param informer: the informer's name from the config.
    :param obj: the object (read-only).
    :param is_in_initial_list: True while the informer is delivering its first LIST.
    :return: ignored.
    """


@hookspec
def kinrun_on_update(informer: str, old: Obj, new: Obj) -> None:
    """An object in an informer's cache changed, or a resync replayed it (client-go ``OnUpdate``).

    On a resync ``old`` and ``new`` are the same object (same resourceVersion).

    :param informer: the informer's name.
    :param old: the previous version (read-only).
    :param new: the current version (read-only).
    :return: ignored.
    """


@hookspec
def kinrun_on_delete(informer: str, obj: Any) -> None:
    """An object left an informer's cache (client-go ``OnDelete``).

    :param informer: the informer's name.
    :param obj: the last known object (read-only), or a
        :class:`kinrun.cache.DeletedFinalStateUnknown` tombstone (``.key``, ``.obj``) when the
        deletion was missed while the watch was down and only noticed at the relist.
    :return: ignored.
    """


# --- indexes ---------------------------------------------------------------------------------


@hookspec
def kinrun_index_funcs(informer: str) -> Mapping[str, IndexFunc] | None:
    """Supply custom index functions for an informer (client-go ``cache.Indexers``).

    Called once per informer at start-up, before the informer starts. Index names a config
    declares with ``{plugin: true}`` must be supplied by exactly one plugin; a plugin may also add
    indexes the config does not mention. Two plugins supplying the same name is a ConfigError.

    :param informer: the informer's name.
    :return: index name -> function taking a (read-only) object and returning the list of index
        values (strings) it is filed under (empty list: not indexed); or None / {} for none.
        The function runs under the store's lock on every add/update: keep it pure and fast;
        an exception it raises is logged and the object is filed under no value of that index.
    """


# --- lifetime --------------------------------------------------------------------------------


@hookspec
def kinrun_startup(config: Any, client: Any) -> None:
    """kinrun is starting: informers are built but not yet started.

    :param config: the loaded :class:`kinrun.config.Config` (frozen).
    :param client: the :class:`kinrun.kube.Client` (under ``--dry-run``: one whose writes are
        sent with ``dryRun=All`` and persisted nowhere).
    :return: ignored. An exception aborts start-up: one line on stderr, ``kinrun: plugin
        'NAME': kinrun_startup failed: TYPE: MESSAGE`` (no traceback), and exit 1, a runtime
        error (``kinrun validate`` cannot see it; a restart may succeed). The plugins whose
        ``kinrun_startup`` is called after it are not started.
    """


@hookspec
def kinrun_shutdown() -> None:
    """kinrun is stopping: controllers have drained, informers are stopped.

    Called once, also after a start-up that a plugin's ``kinrun_startup`` aborted: then for
    every plugin but that one and those whose ``kinrun_startup`` was not called yet.
    :return: ignored. Exceptions are logged.
    """


# --- extension points of the templated actions -----------------------------------------------


@hookspec
def kinrun_template_filters() -> Mapping[str, Callable[..., Any]] | None:
    """Register extra Jinja2 filters for templates, indexer expressions and ``when:`` conditions.

    Called once when the templates are compiled (start-up).

    :return: filter name -> callable (``value, *args`` -> result); None / {} for none. A name
        already defined (by Jinja2, by kinrun, or by another plugin) is a ConfigError. Filters run
        inside the sandbox's data but are plain Python: they must not leak secrets or file access
        the config did not allow.
    """


@hookspec
def kinrun_action_kinds() -> Mapping[str, Callable[..., Any]] | None:
    """Register extra action kinds usable in ``reconcile.actions`` / ``onDelete``.

    Called once when the actions are compiled. A config action ``- {plugin: NAME, with: {...}}``
    looks ``NAME`` up here (``NAME`` may not be a built-in kind: log, apply, patch, delete,
    event, requeueAfter).

    :return: kind name -> :class:`kinrun.actions.ActionKind`: a callable
        ``kind(args, *, obj, ctx) -> Iterable[ApiRequest | LogLine | RequeueAfter]`` receiving the
        ``with`` mapping with every string rendered as a template (``args``), the reconciled
        object (None on delete) and the :class:`ReconcileContext`. It runs while the reconcile is
        being rendered, before anything is sent, so it must only describe work (no I/O); raise an
        exception to fail the render (nothing of that reconcile is sent). None / {} for none.
        A name clashing with a built-in or another plugin's kind is a ConfigError.
        The callable may carry ``RBAC_RULES``, a list of RBAC PolicyRule mappings, for
        ``kinrun rbac``/``manifests``: granted in the reconciled objects' namespaces, and
        cluster-wide for a cluster-scoped resource (built-in, or a ``crds:`` CRD of scope
        Cluster: a Role cannot grant it) or a cluster-scoped reconciled kind. Without it,
        ``kinrun rbac`` asks for a rule in ``rbac.extraRules``.
    """


HOOK_NAMES: Sequence[str] = (
    "kinrun_reconcile", "kinrun_on_add", "kinrun_on_update", "kinrun_on_delete",
    "kinrun_index_funcs", "kinrun_startup", "kinrun_shutdown", "kinrun_template_filters",
    "kinrun_action_kinds",
)
"""Every hook kinrun defines, in the order above."""

__all__ = [
    "HOOK_NAMES", "IndexFunc", "ListerLike", "PROJECT_NAME", "ReconcileContext", "hookimpl",
    "hookspec", "kinrun_action_kinds", "kinrun_index_funcs", "kinrun_on_add", "kinrun_on_delete",
    "kinrun_on_update", "kinrun_reconcile", "kinrun_shutdown", "kinrun_startup",
    "kinrun_template_filters",
]
