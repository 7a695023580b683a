"""The reconcile of one controller: what a worker does with one key, and what that means.

A :class:`Reconciler` is called by a controller's workers (``kinrun.controller``) with a key and
the object the primary informer's cache holds for it (None when absent). It runs the
controller's templated actions (``reconcile.actions`` while the object exists, ``onDelete``
once it is gone) and then its plugins' ``kinrun_reconcile`` hooks, and returns a typed
:class:`Result`: done, requeue after N seconds, retry (with backoff), or permanent failure,
together with why the key was queued (:class:`Cause`).

What a deletion is (the rules every consumer relies on: hooks, ``onDelete`` actions, the fault
soak, and later hot reload and sharding):

* **deleted** — the server deleted the object while it matched the informer's selectors: a
  watch DELETED event. ``onDelete`` runs once with the final state as ``old``.
* **left** — the object still exists but no longer matches the informer's label/field
  selector. kube-apiserver sends a DELETED event for it too, and (as of 1.20, both the watch
  cache and the etcd watcher: ``cacher.go`` ``convertToWatchEvent``, ``etcd3/watcher.go``
  ``transform``) that event carries the object's *previous* content, which still matches. So
  for an informer with a selector the reconcile asks the server (one GET): the same uid still
  there means ``left``; not found, or another uid, means ``deleted``. An event object that does
  not match the selector is ``left`` without asking. As controller-runtime, which sees NotFound
  for both, ``onDelete`` runs once; ``reason`` tells the two apart.
* **unknown** — a relist no longer found the object (a DeletedFinalStateUnknown tombstone):
  ``onDelete`` runs once with the last known state.
* **never seen** — a key that the primary cache never held and no deletion was recorded for
  (mapped from a secondary whose owner is out of the primary's view, or a requeue/retry that
  was queued before a deletion that has since been handled): no ``onDelete``; the key is
  dropped with one debug line.
* **re-created** — deleted and created again (new uid) before the reconcile ran: ``onDelete``
  for the old object, then a reconcile of the new one, each once, in that order. A departure
  followed by the return of the same object (same uid) before the reconcile ran coalesces
  into a reconcile of the live object (level-based: the world as it is now).
* Each recorded deletion is consumed only by its own ``onDelete`` run: a reconcile of the live
  object that was running when the deletion arrived leaves it in place, and a retry or
  ``requeueAfter`` queued before the deletion finds nothing to delete again. An ``onDelete``
  that fails is retried with its deletion (final state and reason) kept; one that asks for a
  requeue keeps it too (it runs again after the delay).

Reasons (``ctx.reason``, ``reason`` in templates; ``kinrun.result`` defines the causes): a
live reconcile carries why its key was queued, the first cause since a worker last took the
key: ``added`` (created, or listed at start: ``initial_list``), ``updated`` (a change that
passed the predicates), ``resync``, ``mapped`` (a watched object), ``requeued``, ``retried``,
``scheduled``. A key queued by a deletion whose object is in the cache again when the
reconcile runs says what the object is now: ``added`` when it was created again (another uid;
``onDelete`` of the old one ran first), ``updated`` when the same object left the view and came
back. ``onDelete`` carries the deletion's own reason: ``deleted``, ``left`` or ``unknown``.

Errors (``reconcile.onError``): when a reconcile of a live object fails (its actions or
``finalize``, the finalizer patch, a hook), the ``onError`` program runs before the result goes
back to the controller (which retries with backoff, or gives up on a permanent failure), with
``error`` in scope (``kinrun.actions.program.error_scope``) and ``obj`` as the server answered
the failed reconcile's last write of it. Its own failure is logged and never replaces the
reconcile's error. ``onDelete`` failures do not run it (there is no object to report on).

Finalizers (a controller with ``finalizer: NAME``; Kubernetes finalizers, as controller-runtime
users write them with ``controllerutil.AddFinalizer``/``RemoveFinalizer``, and as kopf does):

* a live object without NAME gets it first (``kinrun.actions.finalizer``: a JSON patch guarded
  by the resourceVersion read), then the actions run in the same reconcile on the object as the
  server answered; a failed add is retried (nothing else of that reconcile was sent);
* a terminating object (``metadata.deletionTimestamp`` set) with NAME runs ``finalize`` (then
  the hooks) instead of ``actions``: ``obj`` is the live object, so the cleanup can read it. When
  they succeed NAME is removed (a JSON patch testing the list as read) and the server deletes the
  object once no finalizer is left; its DELETED event then runs ``onDelete`` as any deletion
  (the notice after the fact). A failure (or a ``fail`` action) retries with backoff and keeps
  NAME, so the object stays; a ``requeueAfter`` keeps it too and runs ``finalize`` again after
  the delay; ``fail`` with ``permanent: true`` gives up until the object changes again;
* with ``finalizer: {name, when}`` only the live objects ``when`` selects get NAME; a live
  object that carries NAME but is no longer selected is finalized and released: ``finalize``
  runs on it (as for a terminating one), then NAME is removed, and its later reconciles run
  the actions without it (Metacontroller's DecoratorController finalizes an object that no
  longer matches its selector; kopf only removes its finalizer, running no deletion handler);
* a terminating object without NAME runs nothing (as kopf: a deletion that kinrun does not
  hold up is not kinrun's to act on); without ``finalizer:`` a controller's actions run on
  terminating objects as on any other.

While kinrun is not running, a deleted object with NAME stays terminating (and so does a
namespace being deleted around it) until kinrun returns and finalizes it, or someone removes
NAME by hand (``kubectl patch KIND NAME --type=json -p '[{"op": "remove", "path":
"/metadata/finalizers/I"}]'``, I its index). Removing ``finalizer:`` from the config does not
remove NAME from the objects that carry it, and neither does an object leaving the informer's
selectors (``left``: kinrun no longer sees it; ``onDelete`` runs, NAME stays and its deletion
waits for whoever removes it): select with labels that do not come and go.

* **moved** — (sharding, ``kinrun.sharding``) the object left a sharded informer because the
  sharder handed it to another replica: not a deletion, no ``onDelete``. Told from the final
  state (its shard label names another replica: ``moved``), else by the same GET as ``left``:
  the same uid still there and still matching the config's own selectors means ``moved`` (or
  moved and back), no longer matching them ``left``. A tombstone of a sharded informer is
  confirmed by that GET as well.

Read-your-writes (every write of the reconciled object, within a reconcile and after it):

* within a reconcile, each write of the reconciled object (the finalizer add or remove, a
  ``patch`` or ``apply`` of it, ``status``, an ``applySet``'s metadata patches of its parent)
  is based on the answer to the previous one: a resourceVersion precondition that names the
  version the reconcile read, or the answer to one of its own earlier writes, is sent with the
  resourceVersion of the latest answer instead (:class:`_OwnWrites`). So ``status`` and
  ``applySet`` in one reconcile never conflict (409) with each other, in either order; a
  precondition on any other version is sent as written (a write by someone else after the
  reconcile's last write of the object still conflicts). ``obj`` after the finalizer add is the server's
  answer; an action rendered after earlier ones were sent (one that reads ``results``) sees
  ``obj`` as the server answered the last write of it.
* after a reconcile, no later reconcile of that key runs on a cached version older than the
  answer to its last write (KEP-5647's staleness mitigation, as client-go 1.36 controllers
  check the cache's resourceVersion before acting: https://www.kubernetes.dev/resources/keps/5647/).
  :meth:`Reconciler.stale` tells the controller; it skips the key and adds it again after a
  short delay (the watch event of the write usually queues it first), counted by
  ``kinrun_reconcile_stale_skips_total``. resourceVersions are compared as integers (as
  kube-apiserver's are etcd revisions); when either does not parse, nothing is skipped.
  Hooks see the cached object; their writes of it through ``ctx.client`` are noted as the
  actions' are (:class:`_HookWrites`), but sent as written.
* a controller that cannot write (no hooks, no finalizer, and only ``log``,
  ``requeueAfter``, ``stop`` and ``fail`` actions: ``ActionProgram.writes``) keeps none of
  this per-reconcile bookkeeping (about 1.8 us a reconcile): there is nothing to note.

Thread-safety: a Reconciler is called by its controller's workers, never for the same key on two
threads at once (the workqueue guarantees it). ``record_deletion`` runs on informer threads;
the pending deletions are guarded by ``_lock`` (taken only for deletions, never on the path of
a live reconcile with nothing pending).
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from kinrun.actions.program import ActionFailed, ActionFailedPermanently, error_scope
from kinrun.actions.finalizer import (add_finalizer, has_finalizer, is_terminating,
                                      remove_finalizer)
from kinrun.errors import ApiError, NotFoundError, PermanentError
from kinrun.hooks import ReconcileContext
from kinrun.result import (ADDED, CAUSES, DELETION, MAPPED, REQUEUED, RESYNC,  # noqa: F401
                           RETRIED, SCHEDULED, UPDATED, Cause, Outcome, Result, smallest_delay)

Obj = dict[str, Any]

DELETED, LEFT, UNKNOWN, MOVED = "deleted", "left", "unknown", "moved"
DELETION_REASONS = (DELETED, LEFT, UNKNOWN)
"""Why ``onDelete`` runs: the server deleted the object, it left the selectors, or a relist no
longer found it (a tombstone). :data:`MOVED` (handed to another replica) is a departure, not a
deletion: it runs no ``onDelete``."""


# -- deletions --------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Deletion:
    """One recorded departure of an object from the primary cache, waiting for its
    ``onDelete``: ``final`` its last known state (None if it was never stored), ``uid`` its
    uid, ``reason`` one of :data:`DELETION_REASONS`, ``confirm``: True when ``deleted`` still
    has to be told from ``left`` by asking the server (an informer with a selector)."""

    final: Obj | None
    uid: str | None
    reason: str
    confirm: bool = False


ConfirmGone = Callable[[str, str | None], "bool | str"]
"""(key, uid) -> True when the object with that uid no longer exists on the server (GET: not
found, or another uid); False when it is still there (it left the selectors); :data:`MOVED`
when it is still there and only changed replica (sharding). Raises ApiError for other
failures (the reconcile is then retried)."""

Matches = Callable[[Obj], bool | None]
"""Whether an object matches the informer's selectors: True, False, or None when it cannot be
told locally (e.g. a field the object does not carry)."""


_RECREATED, _CAME_BACK = Cause(ADDED), Cause(UPDATED)
"""The cause of a live reconcile whose key was queued by a deletion: the object was created
again (another uid: ``added``, after ``onDelete`` of the old one), or the same object left the
informer's view and came back before the reconcile ran (``updated``). ``deletion`` itself is
never the reason of a live reconcile (module docstring, "Reasons")."""


def _uid(obj: Obj | None) -> str | None:
    return ((obj or {}).get("metadata") or {}).get("uid")


# -- the reconciler ---------------------------------------------------------------------------

RunActions = Callable[..., "float | None"]
"""``program.run(key=, obj=, old=, ctx=, client=) -> delay | None`` (an ``ActionProgram``;
``client``: the controller's client as its actions send through it, noting the answers to
writes of the primary object for read-your-writes)."""
RunHooks = Callable[[str, str, "Obj | None", ReconcileContext], "float | None"]
"""``hooks(controller, key, obj, ctx) -> delay | None`` (``plugin_manager.reconcile_caller``)."""


class Decision:
    """What one reconcile of ``obj`` runs, decided before anything runs; a reconcile carries it
    out (:meth:`Reconciler.__call__`), ``kinrun render`` describes it (:meth:`Reconciler.render`),
    so the two cannot differ.

    ``program``: the actions (a live object), ``onDelete`` (a deletion) or ``finalize`` (an
    object terminating with the controller's finalizer), None when that list is empty (hooks
    may still run); ``what``: its field name; ``add``: the finalizer patch sent before it (a
    live object without the finalizer); ``remove``: the one sent after it when neither it nor
    the hooks asked for a requeue (a terminating object); ``runs``: False when nothing runs at
    all (a terminating object without the finalizer: it is not ours to hold).

    Immutable by contract; slotted (one per reconcile of a controller with a finalizer)."""

    __slots__ = ("program", "what", "add", "remove", "runs")

    def __init__(self, program: Any, what: str, *, add: Any = None, remove: Any = None,
                 runs: bool = True) -> None:
        self.program, self.what, self.add, self.remove, self.runs = (program, what, add,
                                                                     remove, runs)


class Rendered:
    """What :meth:`Reconciler.render` found: ``steps``: the described writes, log lines and
    requeues in the order a reconcile would carry them out (``describe()`` dicts);
    ``nothing``: why nothing (or only the finalizer patch) would run, else None."""

    __slots__ = ("steps", "nothing")

    def __init__(self, steps: tuple[dict[str, Any], ...], nothing: str | None = None) -> None:
        self.steps, self.nothing = steps, nothing


class Reconciler:
    """The reconcile of one controller.

    ``name``: the controller; ``actions`` / ``on_delete``: compiled action programs (or None);
    ``hooks``: the plugins' reconcile caller (or None); ``keep_old``: keep each reconciled
    version as ``old`` for the next reconcile of the key; ``listers`` / ``indexers``: informer
    name -> lister / indexer for the context; ``client``: the API client (None: nothing may be
    sent); ``confirm_gone``: asks the server whether a departed object is gone (see the module
    docstring; None: every DELETED event is a deletion); ``logger``; ``finalizer``: the
    finalizer this controller owns (None: none) and ``finalize``: the program run while an
    object carrying it terminates (see "Finalizers" in the module docstring); ``on_error``:
    the program run when a reconcile of a live object fails (see "Errors");
    ``finalizer_when``: which live objects hold it (None: all; an object that carries it but
    is no longer selected runs ``finalize``, then it is removed).

    ``__call__(key, obj, cause=None) -> Result``; never raises for a failing action or hook (the
    failure is the result). ``record_deletion(obj_or_tombstone, matches)`` is called by the
    primary informer's delete handler.
    """

    def __init__(self, name: str, *, actions: Any = None, on_delete: Any = None,
                 hooks: RunHooks | None = None, keep_old: bool = False,
                 listers: Mapping[str, Any] | None = None,
                 indexers: Mapping[str, Any] | None = None, client: Any = None,
                 confirm_gone: ConfirmGone | None = None,
                 logger: logging.Logger | None = None, finalize: Any = None,
                 finalizer: str | None = None,
                 moved: Callable[[Obj], bool] | None = None, on_error: Any = None,
                 finalizer_when: Callable[[Obj], bool] | None = None) -> None:
        self.name = name
        self.actions, self.on_delete, self.hooks = actions, on_delete, hooks
        self.finalize, self.finalizer = finalize, finalizer
        self.on_error = on_error
        self.finalizer_when = finalizer_when
        self.keep_old = keep_old
        self.listers = dict(listers or {})
        self.indexers = dict(indexers or {})
        self.client = client
        self.confirm_gone = confirm_gone
        self.moved = moved  # sharding: the final state shows the object is another replica's
        self.logger = logger or logging.getLogger(f"kinrun.controller.{name}")
        self._lock = threading.Lock()
        self._pending: dict[str, list[Deletion]] = {}  # guarded by _lock; key -> oldest first
        self._last: dict[str, Obj] = {}  # key -> version last reconciled (keep_old); per key
        # read-your-writes: key -> (uid, resourceVersion of the server's answer to the last
        # write of that primary object); a cache older than it is stale (:meth:`stale`).
        # Written by the worker that owns the key; read by the controller before a reconcile.
        self._written: dict[str, tuple[str | None, str]] = {}
        self._local = threading.local()  # .target, .answer, .versions: see _OwnWrites
        # whether a reconcile may write (the bookkeeping of _OwnWrites is kept only then): a
        # client, and hooks, a finalizer, or a program with an action that sends requests
        self._tracks_writes = client is not None and (
            hooks is not None or finalizer is not None or any(
                getattr(program, "writes", True) for program in
                (actions, on_delete, finalize, on_error) if program is not None))
        self._client = _OwnWrites(client, self._local, self.logger) \
            if client is not None else None
        hook_client = _HookWrites(client, self._local) if client is not None else None
        self._ctx_base = {"controller": name, "listers": self.listers, "client": hook_client,
                          "logger": self.logger, "indexers": self.indexers}

    # -- recording (informer threads) ----------------------------------------------------------

    def record_deletion(self, key: str, final: Obj | None, *, tombstone: bool,
                        matches: Matches | None = None) -> None:
        """Note that ``key`` left the primary cache, before its key is enqueued.

        ``final``: the deleted object (a tombstone's last known state); ``tombstone``: it came
        from a relist (reason ``unknown``); ``matches``: the informer's selector test, None when
        the informer has no selector (every DELETED event is then ``deleted``)."""
        if tombstone:
            deletion = Deletion(final, _uid(final), UNKNOWN, confirm=self.moved is not None)
        elif self.moved is not None and final is not None and self.moved(final):
            deletion = Deletion(final, _uid(final), MOVED)
        elif matches is None or final is None:
            deletion = Deletion(final, _uid(final), DELETED)
        else:
            match = matches(final)
            deletion = Deletion(final, _uid(final), LEFT if match is False else DELETED,
                                confirm=match is not False)
        with self._lock:
            self._pending.setdefault(key, []).append(deletion)

    def pending_deletions(self, key: str) -> list[Deletion]:
        """A copy of ``key``'s recorded deletions not yet handled (oldest first)."""
        with self._lock:
            return list(self._pending.get(key, ()))

    def _take(self, key: str) -> list[Deletion]:
        if not self._pending:  # the common case, no lock: a concurrent record re-enqueues key
            return []
        with self._lock:
            return self._pending.pop(key, [])

    def _put_back(self, key: str, deletions: list[Deletion]) -> None:
        with self._lock:
            self._pending[key] = deletions + self._pending.get(key, [])

    def forget(self, key: str) -> None:
        """Drop everything recorded for ``key`` (the controller gave up on it)."""
        with self._lock:
            self._pending.pop(key, None)
        self._last.pop(key, None)
        self._written.pop(key, None)

    def take_over(self, old: Reconciler, *, keep_last: bool = True) -> None:
        """Hot reload (``kinrun.reload``): carry over what ``old`` (the same controller's
        previous definition) recorded and has not handled: pending deletions (before any
        recorded here) and, when this one keeps ``old`` and ``keep_last``, the last reconciled
        versions. Call while neither runs a reconcile (``Controller.pause``)."""
        with old._lock:
            pending, old._pending = old._pending, {}
        with self._lock:
            for key, deletions in pending.items():
                self._pending[key] = deletions + self._pending.get(key, [])
        if self.keep_old and keep_last:
            for key, obj in old._last.items():
                self._last.setdefault(key, obj)

    # -- reconciling (workers) ---------------------------------------------------------------

    def __call__(self, key: str, obj: Obj | None, cause: Cause | None = None) -> Result:
        deletions = self._take(key)
        returned = False
        if deletions:
            uid = _uid(obj)
            if obj is not None:  # a departure and return of the same object coalesce
                kept = [d for d in deletions if d.uid is None or d.uid != uid]
                returned, deletions = len(kept) < len(deletions), kept
            result = self._run_deletions(key, deletions, cause)
            if result is not None:
                return result
        if obj is None:
            if not deletions:
                self.logger.debug("%s: %s is not in the primary cache and no deletion was "
                                  "recorded for it; dropped", self.name, key)
            return Result("done", cause=cause)
        if cause is not None and cause.kind == DELETION:  # a live object: say what it is now
            cause = _CAME_BACK if returned else _RECREATED
        return self._reconcile_live(key, obj, cause)

    def _reconcile_live(self, key: str, obj: Obj, cause: Cause | None) -> Result:
        if not self._tracks_writes:  # nothing to note: no write can be sent
            return self._reconcile_object(key, obj, cause)
        local = self._local
        read = (obj.get("metadata") or {}).get("resourceVersion")
        local.target, local.answer, local.versions = _identity(obj), None, {read} - {None}
        try:
            return self._reconcile_object(key, obj, cause)
        finally:
            answer = local.answer
            if answer is not None:
                self._written[key] = (_uid(answer), answer["metadata"]["resourceVersion"])
            local.target = local.answer = local.versions = None

    def stale(self, key: str, obj: Obj | None) -> bool:
        """Whether ``obj`` (the cached object of ``key``) is older than the server's answer to
        this controller's last write of it (same uid; both resourceVersions integers): its
        reconcile would act on a view that misses its own write (module docstring,
        "Read-your-writes"). Once the cache has caught up (or the check cannot be made) the
        record is dropped, so only keys with a write in flight keep one. Called by the worker
        that owns ``key`` (the workqueue's guarantee), as the record is written."""
        written = self._written.get(key) if self._written and obj is not None else None
        if written is None:
            return False
        meta = obj.get("metadata") or {}  # type: ignore[union-attr]
        cached, last = _as_int(meta.get("resourceVersion")), _as_int(written[1])
        if (written[0] is None or meta.get("uid") == written[0]) and cached is not None \
                and last is not None and cached < last:
            return True
        self._written.pop(key, None)
        return False

    def _reconcile_object(self, key: str, obj: Obj, cause: Cause | None) -> Result:
        old = self._last.get(key) if self.keep_old else None
        ctx = self._context(key, old, str(cause) if cause is not None else "", cause)
        try:
            if self.finalizer is not None:
                decision = self.decide(obj)
                if not decision.runs or decision.remove is not None:
                    return self._terminating(key, obj, old, ctx, cause, decision)
                if decision.add is not None:
                    obj = self._write_finalizer(key, decision.add, obj, "add")
            delay = self._run(key, obj, old, ctx)
        except Exception as err:  # noqa: BLE001 - the failure is the result
            if self.on_error is not None:
                self._on_error(key, obj, old, ctx, err)
            return Result.failed(err, cause)
        if self.keep_old:
            self._last[key] = obj
        return Result.after(delay, cause)

    # -- deciding and rendering -----------------------------------------------------------------

    def _program(self, obj: Obj | None) -> Any:
        """The list a reconcile of ``obj`` runs unless it terminates: actions, or onDelete."""
        return self.actions if obj is not None else self.on_delete

    def decide(self, obj: Obj | None) -> Decision:
        """What a reconcile of ``obj`` (None: a deletion) runs (see :class:`Decision`)."""
        if obj is None:
            return Decision(self._program(obj), "onDelete")
        if self.finalizer is None:
            return Decision(self._program(obj), "actions")
        if is_terminating(obj):
            if not has_finalizer(obj, self.finalizer):
                return Decision(None, "finalize", runs=False)
            return Decision(self.finalize, "finalize",
                            remove=remove_finalizer(obj, self.finalizer))
        if self.finalizer_when is not None and not self.finalizer_when(obj):
            if has_finalizer(obj, self.finalizer):  # no longer selected: finalized, released
                return Decision(self.finalize, "finalize",
                                remove=remove_finalizer(obj, self.finalizer))
            return Decision(self._program(obj), "actions")
        return Decision(self._program(obj), "actions", add=None if has_finalizer(
            obj, self.finalizer) else add_finalizer(obj, self.finalizer))

    def render(self, key: str, obj: Obj | None, *, old: Obj | None = None,
               reason: str = "") -> Rendered:
        """What a reconcile of ``key`` would send, log and ask, without sending anything
        (``kinrun render``): :meth:`decide`, then the program rendered against this
        Reconciler's listers, between the finalizer patches the reconcile sends (the removal
        left out when the program asks for a requeue). ``obj`` None: a deletion, ``old`` its
        final state. Hooks are code: they are not called; the call a run would make is a step
        (``{hook: kinrun_reconcile, plugins, controller, key, reason, obj, old}``). A ``fail``
        that fires is shown as a run carries it out (:meth:`_render_failed`): the Events and
        log lines before it, the failure, then ``onError`` rendered with the error in scope.
        Raises what rendering raises otherwise (RenderError, VarError)."""
        decision = self.decide(obj)
        if not decision.runs:
            return Rendered((), f"{key} is terminating without finalizer {self.finalizer}: "
                                "nothing runs")
        before = (decision.add.describe(),) if decision.add is not None else ()
        reason = reason or (DELETED if obj is None else "")
        hook = (self._hook_call(key, obj, old, reason),) if self.hooks is not None else ()
        if decision.program is None:
            if hook:
                return Rendered((*before, *hook))
            return Rendered(before, f"controller {self.name!r} has no {decision.what} to "
                                    "render")
        ctx = self._context(key, old, reason, None)
        try:
            result = decision.program.render(key=key, obj=obj, old=old, ctx=ctx)
        except (ActionFailed, ActionFailedPermanently) as failed:
            return Rendered((*before, *self._render_failed(key, obj, old, ctx, failed)))
        after = (decision.remove.describe(),) if decision.remove is not None \
            and not (result.requeue_after or 0) > 0 else ()
        return Rendered((*before, *result.describe(), *hook, *after))

    def _render_failed(self, key: str, obj: Obj | None, old: Obj | None,
                       ctx: ReconcileContext, failed: Exception) -> list[dict[str, Any]]:
        """What a reconcile ended by ``fail`` carries out, described: the Events and log lines
        rendered before it (``failed.kept``), ``{fail: {message, action, at, permanent}}``
        (permanent: the key waits for its next change; else retried with backoff), then the
        ``onError`` list rendered with ``error`` in scope, as ``_on_error`` runs it for a live
        object (its own failure is a step ``{onErrorFailed: message}``, as a run logs it)."""
        steps = [*failed.kept.describe(),  # type: ignore[attr-defined]
                 {"fail": {"message": failed.detail,  # type: ignore[attr-defined]
                           "action": failed.label,  # type: ignore[attr-defined]
                           "at": str(failed.location),  # type: ignore[attr-defined]
                           "permanent": isinstance(failed, ActionFailedPermanently)}}]
        if self.on_error is None or obj is None:
            return steps
        try:
            steps += self.on_error.render(key=key, obj=obj, old=old, ctx=ctx,
                                          extra={"error": error_scope(failed)}).describe()
        except Exception as failure:  # noqa: BLE001 - a run logs it and keeps the first error
            steps.append({"onErrorFailed": str(failure)})
        return steps

    def _hook_call(self, key: str, obj: Obj | None, old: Obj | None,
                   reason: str) -> dict[str, Any]:
        """The ``kinrun_reconcile`` call a run would make after the actions, described (the
        objects by reference: a hook gets them whole)."""
        return {"hook": "kinrun_reconcile",
                "plugins": list(getattr(self.hooks, "plugins", ())),
                "controller": self.name, "key": key, "reason": reason,
                "obj": _reference(obj), "old": _reference(old)}

    def _on_error(self, key: str, obj: Obj, old: Obj | None, ctx: ReconcileContext,
                  err: Exception) -> None:
        """Run ``onError`` for a failed reconcile of ``obj`` (as the server answered its last
        write, when it wrote it), ``error`` in scope (``error_scope``). Its own failure is
        logged; it never replaces ``err``, which stays the reconcile's result."""
        if self._client is not None:
            obj = self._client.written(obj) or obj
        try:
            self.on_error.run(key=key, obj=obj, old=old, ctx=ctx, client=self._client,
                              extra={"error": error_scope(err)})
        except Exception as failure:  # noqa: BLE001 - the reconcile's own error stays
            self.logger.error("%s: onError of %s failed: %s (the reconcile failed with: %s)",
                              self.name, key, failure, err)

    # -- finalizers ----------------------------------------------------------------------------

    def _terminating(self, key: str, obj: Obj, old: Obj | None, ctx: ReconcileContext,
                     cause: Cause | None, decision: Decision) -> Result:
        """A terminating object (``deletionTimestamp`` set) of a controller with a finalizer:
        ``finalize`` and the hooks while ours is on it, then ours removed; nothing without it.
        Raises what they raise (the caller makes it the result; the finalizer stays)."""
        if not decision.runs:
            self.logger.debug("%s: %s is terminating without finalizer %s: no actions run",
                              self.name, key, self.finalizer)
            return Result("done", cause=cause)
        delays = []
        if decision.program is not None:
            delays.append(decision.program.run(key=key, obj=obj, old=old, ctx=ctx,
                                               client=self._client))
        if self.hooks is not None:
            delays.append(self.hooks(self.name, key, obj, ctx))
        asked = smallest_delay(d for d in delays if d is not None and d > 0)
        if asked is not None:  # not finished: the finalizer stays, finalize runs again later
            return Result.after(asked, cause)
        self._write_finalizer(key, decision.remove, obj, "remove")
        return Result("done", cause=cause)

    def _write_finalizer(self, key: str, request: Any, obj: Obj, what: str) -> Obj:
        """Send a finalizer patch; the object as the server now has it (``obj`` itself
        without a client, and under dry-run, where nothing changed). ApiError propagates with
        the controller, key and finalizer in its message."""
        if self._client is None:
            self.logger.info("dry-run: %s", json.dumps(request.describe(), sort_keys=True))
            return obj
        try:
            answer = self._client.execute(request)
        except ApiError as err:
            err.action = "finalizer"  # type: ignore[attr-defined]
            if err.args:
                err.args = (f"controller {self.name!r}: {what} finalizer {self.finalizer} on "
                            f"{key}: {err.args[0]}", *err.args[1:])
            raise
        if getattr(self.client, "dry_run", False):
            return obj
        self.logger.info("%s: %s finalizer %s", request.summary(), what, self.finalizer)
        return answer if isinstance(answer, dict) and answer.get("metadata") else obj

    def _run_deletions(self, key: str, deletions: list[Deletion],
                       cause: Cause | None) -> Result | None:
        """Run ``onDelete`` for each deletion in order; None when all are done. A failure or a
        requeue puts that deletion and the later ones back and is the result."""
        self._last.pop(key, None)
        self._written.pop(key, None)
        for i, deletion in enumerate(deletions):
            try:
                deletion = self._confirmed(key, deletion)
                if deletion.reason == MOVED:
                    self.logger.debug("%s: %s moved to another replica: no onDelete",
                                      self.name, key)
                    continue
                ctx = self._context(key, deletion.final, deletion.reason, cause)
                delay = self._run(key, None, deletion.final, ctx)
            except PermanentError as err:
                self.logger.error("%s: onDelete of %s (%s) failed permanently: %s", self.name,
                                  key, deletion.reason, err)
                continue
            except Exception as err:  # noqa: BLE001
                self._put_back(key, deletions[i:])
                return Result.failed(err, cause)
            if delay is not None and delay > 0:
                self._put_back(key, [deletion, *deletions[i + 1:]])
                return Result.after(delay, cause)
        return None

    def _confirmed(self, key: str, deletion: Deletion) -> Deletion:
        if not deletion.confirm or self.confirm_gone is None:
            return deletion
        gone = self.confirm_gone(key, deletion.uid)
        if isinstance(gone, str):  # MOVED (sharding)
            return Deletion(deletion.final, deletion.uid, gone)
        if gone:
            return Deletion(deletion.final, deletion.uid,
                            UNKNOWN if deletion.reason == UNKNOWN else DELETED)
        return Deletion(deletion.final, deletion.uid, LEFT)

    def _context(self, key: str, old: Obj | None, reason: str,
                 cause: Cause | None) -> ReconcileContext:
        """The frozen ReconcileContext of one reconcile, its ``__dict__`` filled in one C call
        from the controller's constant fields (``_ctx_base``) plus the per-call ones: the same
        object the dataclass constructor builds (a test checks it), at a fraction of its cost
        (~4 us there: ``object.__setattr__`` per field, once per reconcile)."""
        ctx = object.__new__(ReconcileContext)
        fields = ctx.__dict__
        fields.update(self._ctx_base)
        fields["key"], fields["old"], fields["reason"], fields["cause"] = key, old, reason, cause
        return ctx

    def _run(self, key: str, obj: Obj | None, old: Obj | None,
             ctx: ReconcileContext) -> float | None:
        program = self._program(obj)
        hooks = self.hooks
        if program is None:  # hooks only (or nothing): no lists per reconcile
            return hooks(self.name, key, obj, ctx) if hooks is not None else None
        delay = program.run(key=key, obj=obj, old=old, ctx=ctx, client=self._client)
        if hooks is not None:
            asked = hooks(self.name, key, obj, ctx)
            delay = smallest_delay((delay, asked))
        return delay


class _HookWrites:
    """``ctx.client`` as hooks get it: the controller's client, every attribute and method its
    own (``isinstance`` sees the client's class), except that the answer to a write of the
    object being reconciled on this thread (``create``/``update``/``apply``/``patch``/
    ``patch_status``/``execute`` answering that object) is noted as ``_OwnWrites`` notes the
    actions' (``local.answer``, ``local.versions``): read-your-writes and the staleness check
    cover a hook's own writes (issue 28). A hook's requests are sent as written (not rebased:
    the hook composed them). Thread-safe as the client (the notes are per thread); a dry-run
    client's answers are not noted."""

    __slots__ = ("_inner", "_local")

    def __init__(self, client: Any, local: threading.local) -> None:
        self._inner, self._local = client, local

    @property  # type: ignore[misc]
    def __class__(self) -> type:  # noqa: D105 - isinstance(ctx.client, Client) holds
        return type(self._inner)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    def __repr__(self) -> str:
        return repr(self._inner)

    def __eq__(self, other: object) -> bool:  # the client it shows
        inner = other._inner if type(other) is _HookWrites else other  # noqa: E721
        return bool(self._inner == inner)

    def __hash__(self) -> int:
        return hash(self._inner)

    def _noted(self, answer: Any) -> Any:
        local = self._local
        target = getattr(local, "target", None)
        if target is not None and isinstance(answer, dict) and _identity(answer) == target \
                and (answer.get("metadata") or {}).get("resourceVersion") \
                and not getattr(self._inner, "dry_run", False):
            local.answer = answer
            local.versions.add(answer["metadata"]["resourceVersion"])
        return answer

    def create(self, *args: Any, **kwargs: Any) -> Any:
        """The client's ``create``; its answer noted (class docstring)."""
        return self._noted(self._inner.create(*args, **kwargs))

    def update(self, *args: Any, **kwargs: Any) -> Any:
        """The client's ``update``; its answer noted (class docstring)."""
        return self._noted(self._inner.update(*args, **kwargs))

    def apply(self, *args: Any, **kwargs: Any) -> Any:
        """The client's ``apply``; its answer noted (class docstring)."""
        return self._noted(self._inner.apply(*args, **kwargs))

    def patch(self, *args: Any, **kwargs: Any) -> Any:
        """The client's ``patch``; its answer noted (class docstring)."""
        return self._noted(self._inner.patch(*args, **kwargs))

    def patch_status(self, *args: Any, **kwargs: Any) -> Any:
        """The client's ``patch_status``; its answer noted (class docstring)."""
        return self._noted(self._inner.patch_status(*args, **kwargs))

    def execute(self, *args: Any, **kwargs: Any) -> Any:
        """The client's ``execute``; its answer noted (class docstring)."""
        return self._noted(self._inner.execute(*args, **kwargs))


def _reference(obj: Obj | None) -> dict[str, Any] | None:
    """apiVersion, kind, namespace, name and resourceVersion of ``obj`` (None for None)."""
    if obj is None:
        return None
    meta = obj.get("metadata") or {}
    return {k: v for k, v in (("apiVersion", obj.get("apiVersion")), ("kind", obj.get("kind")),
                              ("namespace", meta.get("namespace")), ("name", meta.get("name")),
                              ("resourceVersion", meta.get("resourceVersion"))) if v}


def _identity(obj: Obj) -> tuple[Any, ...]:
    meta = obj.get("metadata") or {}
    return obj.get("apiVersion"), obj.get("kind"), meta.get("namespace") or None, meta.get("name")


def _as_int(version: Any) -> int | None:
    """A resourceVersion as an integer (kube-apiserver's are etcd revisions), else None."""
    try:
        return int(version)
    except (TypeError, ValueError):
        return None


def _rebased(req: Any, versions: set[str], latest: str) -> Any:
    """``req`` with a resourceVersion precondition that names one of ``versions`` (the
    version the reconcile read, or an earlier answer of its own) set to ``latest`` (the answer
    to its last write): in ``metadata.resourceVersion`` of a merge/apply body, or in a JSON
    patch's ``test /metadata/resourceVersion``. ``req`` itself when it has none of them."""
    body = req.body
    if isinstance(body, dict):
        meta = body.get("metadata")
        if isinstance(meta, dict) and meta.get("resourceVersion") in versions - {latest}:
            return replace(req, body={**body, "metadata": {**meta, "resourceVersion": latest}})
    elif isinstance(body, list):
        test = {"op": "test", "path": "/metadata/resourceVersion"}
        ops = [{**op, "value": latest} if isinstance(op, dict) and op.get("op") == "test" and
               op.get("path") == test["path"] and op.get("value") in versions - {latest}
               else op for op in body]
        if ops != body:
            return replace(req, body=ops)
    return req


class _OwnWrites:
    """The controller's client as its actions (and finalizer writes) use it, for
    read-your-writes (module docstring). Per thread, while a reconcile runs: ``local.target``
    (the reconciled object's identity), ``local.versions`` (the resourceVersion it read and
    those of the answers to its writes of it), ``local.answer`` (the last such answer). A write
    of the target is sent based on the last answer (:func:`_rebased`), and its answer kept.
    Everything else is the client's; hooks get it through :class:`_HookWrites`
    (``ctx.client``), which notes their writes of the target too.
    A status patch whose answer lacks a field it set is logged once per field (a warning: the
    server pruned it, not in the CRD's schema, so every reconcile will send it again).
    Thread-safe as the client (the slots are per thread; ``_warned`` only grows, a field may
    at worst be warned about twice); a dry-run client's answers are not kept (nothing was
    stored)."""

    __slots__ = ("_inner", "_local", "_logger", "_warned")

    def __init__(self, client: Any, local: threading.local, logger: logging.Logger) -> None:
        self._inner, self._local, self._logger = client, local, logger
        self._warned: set[tuple[str, str]] = set()

    def execute(self, req: Any, **kwargs: Any) -> Any:
        local = self._local
        ours = getattr(local, "target", None) is not None and local.target == (
            req.api_version, req.kind, req.namespace or None, req.name)
        if ours and local.answer is not None and req.verb != "delete":
            req = _rebased(req, local.versions, local.answer["metadata"]["resourceVersion"])
        answer = self._inner.execute(req, **kwargs)
        if req.subresource == "status" and req.verb == "patch" and isinstance(answer, dict) \
                and isinstance(req.body, dict):
            self._check_kept(req, (req.body.get("status") or {}), answer.get("status") or {})
        if ours and isinstance(answer, dict) and req.verb != "delete" and \
                (answer.get("metadata") or {}).get("resourceVersion") and \
                not getattr(self._inner, "dry_run", False):
            local.answer = answer
            local.versions.add(answer["metadata"]["resourceVersion"])
        return answer

    def written(self, obj: Obj | None) -> Obj | None:
        """The server's answer to the last write of the object being reconciled on this
        thread, else ``obj`` (what an action rendered after that write sees as ``obj``)."""
        answer = getattr(self._local, "answer", None)
        return answer if answer is not None and obj is not None and \
            _identity(answer) == _identity(obj) else obj

    def _check_kept(self, req: Any, sent: Any, kept: Any, path: str = "status") -> None:
        if isinstance(sent, list) and isinstance(kept, list):  # conditions: paired by type
            typed = {k.get("type"): k for k in kept if isinstance(k, dict) and "type" in k}
            for index, item in enumerate(sent):
                other = typed.get(item.get("type")) if isinstance(item, dict) and "type" in item \
                    else (kept[index] if index < len(kept) else None)
                self._check_kept(req, item, other, f"{path}[]")
            return
        if not isinstance(sent, dict) or not isinstance(kept, dict):
            return
        for field, value in sent.items():
            where = f"{path}.{field}"
            if value is None:
                continue
            if field not in kept:
                if (req.kind, where) not in self._warned:
                    self._warned.add((req.kind, where))
                    self._logger.warning(
                        "%s: the server did not keep %s (not in the status schema of %s?): "
                        "a pruned field is written again at every reconcile", req.summary(),
                        where, req.kind)
            else:
                self._check_kept(req, value, kept[field], where)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


def confirm_gone_by_get(client: Any, api_version: str, kind: str, *,
                        moved: Callable[[Obj], bool] | None = None) -> ConfirmGone:
    """A :data:`ConfirmGone` that GETs the object through ``client`` (``Client.get``): gone
    when not found or when the uid differs. Other ApiErrors propagate (retried). ``moved``
    (sharding): the live object (same uid) only changed replica: :data:`MOVED` instead of
    False."""
    def confirm(key: str, uid: str | None) -> bool | str:
        namespace, _, name = key.rpartition("/")
        try:
            live = client.get(api_version, kind, name, namespace or None)
        except NotFoundError:
            return True
        if uid is not None and _uid(live) != uid:
            return True
        return MOVED if moved is not None and moved(live) else False
    return confirm
