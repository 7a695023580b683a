"""A controller's finalizer (``controllers[].finalizer``): its name, and the two writes that add
and remove it, described as ApiRequests before they are sent.

Semantics are Kubernetes' (API concepts, "Finalizers"; controller-runtime's
``controllerutil.AddFinalizer``/``RemoveFinalizer`` followed by a write): while an object's
``metadata.finalizers`` holds a name, a DELETE only sets ``metadata.deletionTimestamp`` and the
object stays, "terminating", until the last finalizer is removed; no finalizer can be added
to a terminating object. The reconcile (``kinrun.reconcile``) adds ours to a live object before
its actions' first write, runs ``reconcile.finalize`` while it terminates, and removes ours once
those succeeded.

The writes are JSON patches (RFC 6902), each with a ``test`` precondition so that a concurrent
writer of the list is never overwritten (the API server answers 409/422 and the reconcile
retries with a fresh object):

* add: ``test /metadata/resourceVersion`` (the version the reconcile read, as
  controller-runtime's ``MergeFromWithOptimisticLock``), then ``add /metadata/finalizers``
  with the list plus ours (at the end, as ``AddFinalizer``);
* remove: ``test /metadata/finalizers`` (the list as read), then ``replace`` it without ours.
  Only the list is tested, not the resourceVersion: the ``finalize`` actions may have written
  the object itself (its status) a moment before.

Pure data; nothing is sent here.
"""

from __future__ import annotations

from typing import Any

from kinrun.kube.request import ApiRequest
from kinrun.selectors import DNS1123_SUBDOMAIN, QUALIFIED_NAME

Obj = dict[str, Any]



def finalizer_name_problem(name: Any) -> str | None:
    """Why ``name`` cannot be kinrun's finalizer, or None.

    It must be a Kubernetes qualified name (apimachinery ``IsQualifiedName``, which
    kube-apiserver applies to ``metadata.finalizers``: an optional DNS-1123 subdomain prefix of
    at most 253 characters and ``/``, then at most 63 of ``[A-Za-z0-9-_.]`` starting and ending
    alphanumeric) *with* the domain prefix: a bare name could clash with the built-in
    finalizers (``kubernetes``, ``orphan``, ``foregroundDeletion``) and other writers, and
    newer kube-apiservers warn about it ("prefer a domain-qualified finalizer name ..."; 1.20,
    the tests' server, accepts it silently)."""
    if not isinstance(name, str) or not name:
        return "finalizer must be a non-empty string such as example.com/cleanup"
    prefix, slash, short = name.rpartition("/")
    if not slash:
        return (f"finalizer {name!r} has no domain prefix: write it domain-qualified, such as "
                f"example.com/{name} (a bare name can clash with the built-in finalizers)")
    if not prefix or len(prefix) > 253 or not DNS1123_SUBDOMAIN.fullmatch(prefix):
        return (f"finalizer {name!r}: the prefix {prefix!r} must be a DNS subdomain (lower case "
                "letters, digits, '-' and '.'), such as example.com")
    if not short or len(short) > 63 or not QUALIFIED_NAME.fullmatch(short):
        return (f"finalizer {name!r}: the name after '/' must be 1-63 letters, digits, '-', '_' "
                "or '.', starting and ending with a letter or digit")
    return None


def finalizers(obj: Obj) -> list[str]:
    """``metadata.finalizers`` of ``obj`` (a new list; [] when absent)."""
    return list((obj.get("metadata") or {}).get("finalizers") or ())


def has_finalizer(obj: Obj, name: str) -> bool:
    """Whether ``obj`` carries the finalizer ``name`` (``controllerutil.ContainsFinalizer``)."""
    return name in finalizers(obj)


def is_terminating(obj: Obj) -> bool:
    """Whether ``obj`` is being deleted: ``metadata.deletionTimestamp`` is set."""
    return bool((obj.get("metadata") or {}).get("deletionTimestamp"))


def _request(obj: Obj, operations: list[Obj]) -> ApiRequest:
    meta = obj.get("metadata") or {}
    return ApiRequest("patch", str(obj.get("apiVersion") or ""), str(obj.get("kind") or ""),
                      str(meta.get("name") or ""), meta.get("namespace") or None,
                      body=operations, patch_type="json")


def add_finalizer(obj: Obj, name: str) -> ApiRequest:
    """The JSON patch that adds ``name`` to ``obj`` as read (module docstring); ``obj`` must
    carry apiVersion, kind, metadata.name and metadata.resourceVersion (a cached object
    does)."""
    rv = (obj.get("metadata") or {}).get("resourceVersion")
    ops: list[Obj] = [{"op": "test", "path": "/metadata/resourceVersion", "value": rv}] \
        if rv else []
    ops.append({"op": "add", "path": "/metadata/finalizers",
                "value": [*finalizers(obj), name]})
    return _request(obj, ops)


def remove_finalizer(obj: Obj, name: str) -> ApiRequest:
    """The JSON patch that removes ``name`` from ``obj`` as read (module docstring)."""
    current = finalizers(obj)
    return _request(obj, [{"op": "test", "path": "/metadata/finalizers", "value": current},
                          {"op": "replace", "path": "/metadata/finalizers",
                           "value": [f for f in current if f != name]}])


class FinalizerCondition:
    """A controller's ``finalizer.when``: which live objects hold the finalizer.

    ``expression``: the compiled expression (``TemplateEngine.value``), evaluated with ``obj``
    in scope (and the engine's globals); truthy as an action's ``when:`` (text ``false``,
    ``no``, ``0``, ``none``, ``off`` or empty is false). ``location``: its place in the config.
    ``controller``: named by errors. Calling it raises RenderError (at ``finalizer.when``) when
    the expression fails; the reconcile then fails and is retried with backoff, nothing sent.
    Immutable; thread-safe (as a compiled template)."""

    def __init__(self, expression: Any, location: Any, controller: str) -> None:
        self.expression, self.location, self.controller = expression, location, controller

    def __call__(self, obj: Obj) -> bool:
        """Whether ``obj`` (a live object) is selected: it should carry the finalizer."""
        from kinrun.actions.errors import RenderError
        from kinrun.actions.kinds import is_true
        from kinrun.templating import TemplateRenderError

        try:
            value = self.expression.evaluate({"obj": obj})
        except TemplateRenderError as exc:
            raise RenderError(exc.detail, controller=self.controller, index=0,
                              label="finalizer.when", location=self.location,
                              template_line=exc.template_line) from exc
        return is_true(value)

