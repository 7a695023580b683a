"""The admission stage of the embedded server's writes: a create, update or delete through the
API with its mutating and validating webhooks (``webhooks``), in kube-apiserver 1.20's order.

- **Create**: the decoded, defaulted body goes to the mutating webhooks (each patch decoded
  and defaulted again), then the strategy's PrepareForCreate (status reset) and the schema's
  validation (required fields, a CRD's schema) run on the result; then the store prepares the object (a dry run: name generated, uid,
  creationTimestamp, validation), the validating webhooks see that object, and the store
  creates it with that uid and creationTimestamp.
- **Update** (PUT, PATCH, apply, the ``status`` subresource): optimistic, as the registry's
  GuaranteedUpdate over etcd: read the object, compute the new one (``mutate``: the decoded
  body, the patch applied or the apply merged, decoded and defaulted, with its
  managedFields), mutating webhooks (each patch decoded and defaulted again), then the
  strategy's PrepareForUpdate (``status`` kept from the stored object, or all but ``status``
  for the ``status`` subresource) and the schema's validation, the store's dry run
  (metadata and kind validation), validating webhooks, then commit only if the object is
  still at the resourceVersion read; otherwise all again (at most :data:`MAX_TRIES` times,
  then 409). This is 1.20's order (``rest.DefaultUpdatedObjectInfo``'s transformers run
  mutating admission, then ``Store.Update`` runs ``rest.BeforeUpdate``, then the
  validating admission): a webhook may fill a required field an update lacks, and one
  that makes it invalid is refused by the validation after it. A try that fails (a denial,
  a failed call, an invalid object) is done once more on a fresh read before its error is
  answered, as 1.20's etcd3 store does when its first try worked on the watch cache's
  copy: a webhook sees a denied or invalid update twice. A server-side apply of a missing
  object is a create (its body decoded, validated after the mutating webhooks).
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
from .strategy import prepare_for_update, reset_status
from .webhooks import MUTATING, VALIDATING, Attributes, Review, Webhooks

Obj = dict[str, Any]
MAX_TRIES = 10
"""Reads of an object changed meanwhile before an admitted update answers 409."""


class _Changed(Exception):
    """The object moved past the resourceVersion the webhooks saw: try again."""


class Schemas(Protocol):
    """The schema steps of a write (``SchemaCheck``): each ``(rtype, version, obj)`` may
    change ``obj`` in place and raises StatusError (400, 422)."""

    def decode(self, rtype: ResourceType, version: str, obj: Obj) -> None: ...
    def validate(self, rtype: ResourceType, version: str, obj: Obj) -> None: ...


Mutate = Callable[[Obj], Obj]
"""An update's ``mutate(current) -> new``: the updated object computed from the stored one
(decoded and defaulted, with its managedFields; not yet prepared nor validated)."""


class AdmittedWrites:
    """The store's writes through admission webhooks (module docstring). ``schemas``: a
    create's body and an update's computed object come decoded, not validated: each webhook
    patch is decoded again (``schemas.decode``) and the result validated once, after the
    mutating webhooks (``schemas.validate``; for an update after PrepareForUpdate), as
    kube-apiserver runs the strategy's validation after mutating admission (a webhook may
    fill a required field)."""

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
        """Create ``body`` (owned by the caller, decoded: ``Schemas.decode``) through the
        webhooks; the stored object. ``warnings``: the webhooks' warnings are appended.
        Raises StatusError."""
        name = str((body.get("metadata") or {}).get("name") or "")
        ns = (namespace or (body.get("metadata") or {}).get("namespace") or "default") \
            if rtype.namespaced else None
        review = self.webhooks.review(Attributes(rtype, version, "", "CREATE", ns, name,
                                                 dry_run), body, None) if self.active() else None
        if review is None:
            self._prepared_create(rtype, version, body)
            return self.store.create_object(rtype, body, namespace=namespace, dry_run=dry_run)
        try:
            body = review.mutate(body, None, lambda o: self._decode_patched(rtype, version, o)) \
                or body
            self._prepared_create(rtype, version, body)
            if not review.validating:
                return self.store.create_object(rtype, body, namespace=namespace,
                                                dry_run=dry_run)
            prepared = self.store.create_object(rtype, body, namespace=namespace, dry_run=True)
            review.validate(prepared, None)
            return self.store.create_object(rtype, prepared, namespace=namespace,
                                            dry_run=dry_run, prepared=True)
        finally:
            warnings += review.warnings

    def _decode_patched(self, rtype: ResourceType, version: str, obj: Obj) -> None:
        """A webhook's patched object decoded and defaulted again (``Schemas.decode``); one
        that cannot be decoded is 500 InternalError, not 400, as 1.20's mutating dispatcher
        answers (``apierrors.NewInternalError`` of the decoder's error)."""
        try:
            self._schemas.decode(rtype, version, obj)
        except st.StatusError as exc:
            if exc.code != 400:
                raise
            raise st.new_internal_error(exc.message) from None

    def _prepared_create(self, rtype: ResourceType, version: str, body: Obj) -> None:
        """``body`` (mutated by the webhooks) as 1.20's ``rest.BeforeCreate`` makes it after
        mutating admission: the strategy's PrepareForCreate (``strategy.reset_status``: no
        status, a Pod's phase and qosClass from its spec), the fields Go's encoding always
        writes (``fill_zero_fields``), then the schema's validation."""
        reset_status(rtype, body)
        self._schemas.fill_zero_fields(rtype, version, body)
        self._schemas.validate(rtype, version, body)

    def _prepared(self, attrs: Attributes, new: Obj, current: Obj) -> Obj:
        """``new`` (computed, then mutated by the webhooks) as it replaces ``current``: 409
        when it names another resourceVersion, the strategy's PrepareForUpdate
        (``strategy.prepare_for_update``), then the schema's validation (422), as 1.20's
        ``Store.Update`` after mutating admission (its resourceVersion check, then
        ``rest.BeforeUpdate``)."""
        meta = new.get("metadata")
        sent = meta.get("resourceVersion") if isinstance(meta, dict) else None
        if sent not in (None, "") and str(sent) != str(current["metadata"].get("resourceVersion")):
            raise st.conflict(attrs.rtype.group, attrs.rtype.plural, attrs.name,
                              st.MODIFIED_CONFLICT)
        obj = prepare_for_update(attrs.rtype, new, current, attrs.subresource)
        self._schemas.fill_zero_fields(attrs.rtype, attrs.version, obj)
        self._schemas.validate(attrs.rtype, attrs.version, obj)
        return obj

    def _plain(self, attrs: Attributes, mutate: Mutate, create: Callable[[], Obj] | None
               ) -> tuple[Obj, bool]:
        """The update without webhooks: compute, prepare and validate under the store's
        lock; a missing object created from ``create()`` validated."""
        def validated() -> Obj:
            obj = create()  # type: ignore[misc]
            self._prepared_create(attrs.rtype, attrs.version, obj)
            return obj

        return self.store.guaranteed_update(
            attrs.rtype, attrs.namespace, attrs.name,
            lambda current: self._prepared(attrs, mutate(current), current),
            create=None if create is None else validated, dry_run=attrs.dry_run)

    def update(self, rtype: ResourceType, version: str, subresource: str,
               namespace: str | None, name: str, mutate: Mutate, *,
               dry_run: bool, warnings: list[str],
               create: Callable[[], Obj] | None = None) -> tuple[Obj, bool]:
        """``Store.guaranteed_update`` through the webhooks: ``(stored object, created)``.
        ``mutate``: :data:`Mutate`; ``create() -> obj``: a server-side apply's object when
        none is stored (decoded; created through :meth:`create`). Raises StatusError (409
        after :data:`MAX_TRIES` reads of a moving object)."""
        ns = namespace if rtype.namespaced else None
        attrs = Attributes(rtype, version, subresource, "UPDATE", ns, name, dry_run)
        if not self.active():
            return self._plain(attrs, mutate, create)
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
            review = self.webhooks.review(attrs, new, current)
            if review is None:
                return self._plain(attrs, mutate, create)
            try:
                return self._update_once(review, entry.rv, current, new), False
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

    def _update_once(self, review: Review, rv: int, current: Obj, new: Obj) -> Obj:
        attrs = review.attrs
        rtype = attrs.rtype
        new = review.mutate(new, current,
                            lambda o: self._decode_patched(rtype, attrs.version, o)) or new
        new = self._prepared(attrs, new, current)

        def same(cur: Obj) -> Obj:
            if str(cur["metadata"].get("resourceVersion")) != str(rv):
                raise _Changed
            return new

        if review.validating:
            prepared, _ = self.store.guaranteed_update(rtype, attrs.namespace, attrs.name, same,
                                                       dry_run=True)
            review.validate(prepared, current)
        obj, _ = self.store.guaranteed_update(rtype, attrs.namespace, attrs.name, same,
                                              dry_run=attrs.dry_run)
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
