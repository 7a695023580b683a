"""The admission stage of the embedded server's writes: a create, update or delete through the
API with its mutating and validating webhooks (``webhooks``), in kube-apiserver 1.20's order.

- **Create**: the decoded, defaulted body goes to the mutating webhooks (each patch decoded
  and defaulted again), then the schema's validation (required fields, a CRD's schema) runs
  on the result; then the store prepares the object (a dry run: name generated, uid,
  creationTimestamp, validation), the validating webhooks see that object, and the store
  creates it with that uid and creationTimestamp.
- **Update** (PUT, PATCH, apply, the ``status`` subresource): optimistic, as the registry's
  GuaranteedUpdate over etcd: read the object, compute the new one (``mutate``), mutating
  webhooks, the store's dry run, validating webhooks, then commit only if the object is still
  at the resourceVersion read; otherwise all again (at most :data:`MAX_TRIES` times, then
  409). A try that fails (a denial, a failed call, an invalid object) is done once more on a
  fresh read before its error is answered, as 1.20's etcd3 store does when its first try
  worked on the watch cache's copy: a webhook sees a denied update twice. A server-side
  apply of a missing object is a create.
- **Delete**: mutating webhooks (their patches ignored), then validating webhooks, both with
  the object as ``oldObject`` and no ``object``; then the delete, with the resourceVersion read as precondition when the request set
  none (a change in between: again).

No webhook call happens under the store's lock. A write no webhook matches goes straight to
the store, exactly as without this module. The ``scale`` subresource is not sent to webhooks
(docs/embedded.md). Thread-safety: stateless apart from the Webhooks it holds.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

from . import status as st
from .registry import ResourceType
from .store import Store
from .webhooks import MUTATING, VALIDATING, Attributes, Review, Webhooks

Obj = dict[str, Any]
MAX_TRIES = 10
"""Reads of an object changed meanwhile before an admitted update answers 409."""


class _Changed(Exception):
    """The object moved past the resourceVersion the webhooks saw: try again."""


class Schemas(Protocol):
    """The schema steps of a write (``SchemaCheck``): each ``(rtype, version, obj)`` may
    change ``obj`` in place and raises StatusError (400, 422)."""

    def admit(self, rtype: ResourceType, version: str, obj: Obj) -> None: ...
    def decode(self, rtype: ResourceType, version: str, obj: Obj) -> None: ...
    def validate(self, rtype: ResourceType, version: str, obj: Obj) -> None: ...


class AdmittedWrites:
    """The store's writes through admission webhooks (module docstring). ``schemas``: an
    updated object a webhook patched is admitted against its schema again
    (``schemas.admit``); a create's body comes decoded, not validated: each webhook patch is
    decoded again (``schemas.decode``) and the result validated once, after the mutating
    webhooks (``schemas.validate``), as kube-apiserver runs the strategy's validation after
    mutating admission (a webhook may fill a required field)."""

    def __init__(self, store: Store, schemas: Schemas, webhooks: Webhooks | None = None
                 ) -> None:
        self.store = store
        self.webhooks = webhooks or Webhooks(store)
        self._schemas = schemas

    def active(self) -> bool:
        """Whether any webhook configuration is stored (else writes skip this stage)."""
        return self.store.holds_any(MUTATING) or self.store.holds_any(VALIDATING)

    def create(self, rtype: ResourceType, version: str, body: Obj, *, namespace: str | None,
               dry_run: bool, warnings: list[str]) -> Obj:
        """Create ``body`` (owned by the caller) through the webhooks; the stored object.
        ``warnings``: the webhooks' warnings are appended. Raises StatusError."""
        name = str((body.get("metadata") or {}).get("name") or "")
        ns = (namespace or (body.get("metadata") or {}).get("namespace") or "default") \
            if rtype.namespaced else None
        review = self.webhooks.review(Attributes(rtype, version, "", "CREATE", ns, name,
                                                 dry_run), body, None) if self.active() else None
        if review is None:
            self._schemas.validate(rtype, version, body)
            return self.store.create_object(rtype, body, namespace=namespace, dry_run=dry_run)
        try:
            body = review.mutate(body, None, lambda o: self._schemas.decode(rtype, version, o)) or body
            self._schemas.validate(rtype, version, body)
            if not review.validating:
                return self.store.create_object(rtype, body, namespace=namespace,
                                                dry_run=dry_run)
            prepared = self.store.create_object(rtype, body, namespace=namespace, dry_run=True)
            review.validate(prepared, None)
            return self.store.create_object(rtype, prepared, namespace=namespace,
                                            dry_run=dry_run, prepared=True)
        finally:
            warnings += review.warnings

    def update(self, rtype: ResourceType, version: str, subresource: str,
               namespace: str | None, name: str, mutate: Callable[[Obj], Obj], *,
               dry_run: bool, warnings: list[str],
               create: Callable[[], Obj] | None = None) -> tuple[Obj, bool]:
        """``Store.guaranteed_update`` through the webhooks: ``(stored object, created)``.
        Raises StatusError (409 after :data:`MAX_TRIES` reads of a moving object)."""
        if not self.active():
            return self.store.guaranteed_update(rtype, namespace, name, mutate, create=create,
                                                dry_run=dry_run)
        ns = namespace if rtype.namespaced else None
        again = True   # the etcd3 store's mustCheckData: one more try after a failed one
        for _ in range(MAX_TRIES):
            try:
                entry = self.store.get_entry(rtype, ns, name)
            except st.StatusError as exc:
                if exc.code != 404 or create is None:
                    raise
                return self.create(rtype, version, create(), namespace=ns, dry_run=dry_run,
                                   warnings=warnings), True
            current = entry.decode()
            new = mutate(entry.decode())
            review = self.webhooks.review(Attributes(rtype, version, subresource, "UPDATE", ns,
                                                     name, dry_run), new, current)
            if review is None:
                return self.store.guaranteed_update(rtype, namespace, name, mutate,
                                                    create=create, dry_run=dry_run)
            try:
                return self._update_once(review, entry.rv, current, new, dry_run), False
            except _Changed:
                continue
            except st.StatusError:
                if not again:
                    raise
                again = False
            finally:
                warnings += review.warnings
        raise st.conflict(rtype.group, rtype.plural, name, "the object changed while "
                          "admission webhooks were called; please try again")

    def _update_once(self, review: Review, rv: int, current: Obj, new: Obj,
                     dry_run: bool) -> Obj:
        attrs = review.attrs
        rtype = attrs.rtype
        new = review.mutate(new, current, lambda o: self._schemas.admit(rtype, attrs.version, o)) \
            or new

        def same(cur: Obj) -> Obj:
            if str(cur["metadata"].get("resourceVersion")) != str(rv):
                raise _Changed
            return new

        if review.validating:
            prepared, _ = self.store.guaranteed_update(rtype, attrs.namespace, attrs.name, same,
                                                       dry_run=True)
            review.validate(prepared, current)
        obj, _ = self.store.guaranteed_update(rtype, attrs.namespace, attrs.name, same,
                                              dry_run=dry_run)
        return obj

    def delete(self, rtype: ResourceType, version: str, namespace: str | None, name: str, *,
               dry_run: bool, warnings: list[str], **options: Any) -> tuple[Obj, bool]:
        """``Store.delete_object`` (``options``: its keywords) through the webhooks."""
        if not self.active():
            return self.store.delete_object(rtype, namespace, name, dry_run=dry_run, **options)
        ns = namespace if rtype.namespaced else None
        for _ in range(MAX_TRIES):
            entry = self.store.get_entry(rtype, ns, name)
            current = entry.decode()
            review = self.webhooks.review(Attributes(rtype, version, "", "DELETE", ns, name,
                                                     dry_run), None, current)
            if review is None:
                return self.store.delete_object(rtype, namespace, name, dry_run=dry_run,
                                                **options)
            try:
                review.mutate(None, current)
                review.validate(None, current)
            finally:
                warnings += review.warnings
            if options.get("resource_version"):
                return self.store.delete_object(rtype, namespace, name, dry_run=dry_run,
                                                **options)
            try:
                return self.store.delete_object(rtype, namespace, name, dry_run=dry_run,
                                                **{**options, "resource_version": str(entry.rv)})
            except st.StatusError as exc:
                if exc.code != 409:
                    raise
        raise st.conflict(rtype.group, rtype.plural, name, "the object changed while "
                          "admission webhooks were called; please try again")
