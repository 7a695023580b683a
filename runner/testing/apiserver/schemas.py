"""Schema admission of every write through the API, as kube-apiserver 1.20 does it.

Built-in kinds (their schema: ``kinrun.openapi.builtin_schemas``): a value of the wrong JSON
type is 400 BadRequest (the Go decoder's ``cannot be handled as``); unknown fields are dropped;
Go-coded defaults are filled (``BUILTIN_DEFAULTS``; a Secret's ``stringData`` is merged into
``data`` and ``type`` defaults to ``Opaque``); required fields missing are 422 Invalid.
Custom resources (their CRD version's ``openAPIV3Schema``): pruned (unknown fields dropped
unless ``x-kubernetes-preserve-unknown-fields``), defaulted, then validated (422 Invalid with
one cause per field). A server-side apply whose body structured-merge-diff cannot type (an
undeclared field of a built-in kind, an associative list entry without its key, a null entry,
two entries of one key) is 500 ``failed to create typed patch object``, as 1.20 answers.

Direct store writes (``Store.create``, ``EmbeddedAPIServer.load``) are not admitted: tests seed
what they like. Concurrency: ``SchemaCheck`` caches CRD schemas in a dict written under the GIL
(a race recomputes the same value).
"""

from __future__ import annotations

import base64
import copy
from typing import Any

from kinrun.openapi import (BUILTIN_DEFAULTS, GO_ZERO_FIELDS, Problem, Schema, apply_defaults,
                            builtin_schemas, canonicalize_quantities, crd_errors, crd_schema,
                            decode_errors, prune, required_errors, undeclared_field)

from . import status as st
from .registry import ResourceType
from .strategy import default_requests
from kinrun.openapi.typed import typed_errors
from .store import CRDS, Store
from .validation import undecodable

Obj = dict[str, Any]
ROOT_FIELDS = ("apiVersion", "kind", "metadata")


def _invalid(rtype: ResourceType, obj: Obj, problems: list[Problem]) -> st.StatusError:
    name = str((obj.get("metadata") or {}).get("name") or "")
    return st.invalid(rtype.kind, rtype.group, name,
                      [(p.field, p.reason, p.message) for p in problems])


def merge_string_data(obj: Obj, default_type: bool = True) -> None:
    """A Secret's ``stringData`` merged into ``data`` (base64, stringData wins) and removed;
    ``type`` defaulted to ``Opaque`` unless not ``default_type`` (as the Secret strategy and
    defaults of kube-apiserver)."""
    string_data = obj.pop("stringData", None)
    if isinstance(string_data, dict) and string_data:
        data = obj.get("data") if isinstance(obj.get("data"), dict) else {}
        obj["data"] = {**data, **{k: base64.b64encode(str(v).encode()).decode()
                                  for k, v in string_data.items()}}
    if default_type and not obj.get("type"):
        obj["type"] = "Opaque"


def _kind_defaults(rtype: ResourceType, schema: Schema, obj: Obj) -> None:
    """What every write of a built-in object gets after its schema's defaults, as Go's
    decoding does: quantities in canonical form, a Pod's requests from its limits, a Service
    port's ``targetPort`` from its ``port``."""
    canonicalize_quantities(schema, obj)
    spec = obj.get("spec")
    if rtype.group == "" and rtype.kind == "Pod" and isinstance(spec, dict):
        default_requests(spec)
    if rtype.group == "" and rtype.kind == "Service" and isinstance(spec, dict):
        for port in spec.get("ports") or []:  # SetDefaults_Service: 0, "" or none -> port
            if isinstance(port, dict) and isinstance(port.get("port"), int) \
                    and port.get("targetPort") in (None, 0, ""):
                port["targetPort"] = port["port"]


def _apply_all_defaults(rtype: ResourceType, schema: Schema, obj: Obj) -> None:
    """Every default a write gets, in place: a CRD's schema defaults; for a built-in kind a
    Secret's ``stringData`` merged, the Go defaults (``BUILTIN_DEFAULTS``) and the kind's own
    (:func:`_kind_defaults`)."""
    if rtype.custom:
        apply_defaults(schema, obj)
        return
    if rtype.group == "" and rtype.kind == "Secret":
        merge_string_data(obj)
    apply_defaults(schema, obj, BUILTIN_DEFAULTS)
    _kind_defaults(rtype, schema, obj)


def drop_nulls(obj: Any) -> None:
    """Remove, in place, every field whose value is null, at any depth (not list entries):
    a built-in kind's body is decoded into Go structs, where null leaves a field unset and
    encoding omits it (``labels: null``, or a list a server-side apply emptied, is absent
    from what kube-apiserver stores and answers). An empty map or list (``data: {}``) is
    kept: Go validates it as empty, not nil, and only its encoding omits it (a difference,
    docs/embedded.md)."""
    if isinstance(obj, dict):
        for key in [k for k, v in obj.items() if v is None]:
            del obj[key]
        for value in obj.values():
            drop_nulls(value)
    elif isinstance(obj, list):
        for value in obj:
            drop_nulls(value)


class SchemaCheck:
    """Admits objects of ``store``'s kinds against their schemas (see module docstring)."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self._crd_schemas: dict[tuple[str, str, str], Schema | None] = {}  # (crd, rv, version)

    def schema(self, rtype: ResourceType, version: str) -> Schema | None:
        """The schema of ``rtype`` at ``version``: the built-in one, the CRD version's
        ``openAPIV3Schema``, or None when there is none."""
        if not rtype.custom:
            return builtin_schemas().for_gvk(rtype.group, version, rtype.kind)
        crd_type = self.store.registry.get(CRDS)
        name = f"{rtype.plural}.{rtype.group}"
        try:
            entry = self.store.get_entry(crd_type, None, name)  # type: ignore[arg-type]
        except st.StatusError:
            return None
        key = (name, str(entry.rv), version)
        if key not in self._crd_schemas:
            versions = (entry.decode().get("spec") or {}).get("versions") or []
            found = [v for v in versions if isinstance(v, dict) and v.get("name") == version]
            self._crd_schemas[key] = crd_schema(found[0]) if found else None
        return self._crd_schemas[key]

    def admit(self, rtype: ResourceType, version: str, obj: Obj) -> None:
        """Decode-check, prune, default and validate ``obj`` (owned by the caller, changed in
        place) as a write of ``rtype`` at ``version``: :meth:`decode`, then :meth:`validate`.
        Raises 400 or 422 StatusError."""
        self.decode(rtype, version, obj)
        self.validate(rtype, version, obj)

    def decode(self, rtype: ResourceType, version: str, obj: Obj) -> None:
        """What kube-apiserver's decoding does to a body before admission: a value of the wrong
        type refused (400, built-in kinds), unknown fields pruned, defaults applied (``obj``
        changed in place). Mutating webhooks see the result; :meth:`validate` comes after
        them."""
        schema = self.schema(rtype, version)
        if schema is None:
            return
        errors = decode_errors(schema, obj) if not rtype.custom else []
        if errors:
            raise undecodable(rtype, version, "; ".join(errors))
        if not rtype.custom:
            drop_nulls(obj)
        prune(schema, obj, keep_root=ROOT_FIELDS)
        _apply_all_defaults(rtype, schema, obj)

    def validate(self, rtype: ResourceType, version: str, obj: Obj) -> None:
        """The schema's checks of a decoded object (a CRD's validation, a built-in kind's
        required fields): 422 StatusError naming each problem. As kube-apiserver's strategy
        validation, after the mutating webhooks."""
        schema = self.schema(rtype, version)
        if schema is None:
            return
        problems = crd_errors(schema, obj) if rtype.custom else required_errors(schema, obj)
        if problems:
            raise _invalid(rtype, obj, problems)

    def fill_zero_fields(self, rtype: ResourceType, version: str, obj: Obj) -> None:
        """Fill, in place, the fields a built-in ``obj`` always has when kube-apiserver 1.20
        encodes it (``GO_ZERO_FIELDS``: a Deployment's ``status: {}``); after the strategy
        reset or replaced its status. Custom resources are left as they are."""
        schema = None if rtype.custom else self.schema(rtype, version)
        if schema is not None:
            apply_defaults(schema, obj, GO_ZERO_FIELDS)

    def defaulted(self, rtype: ResourceType, version: str, obj: Obj) -> Obj:
        """A copy of ``obj`` (the result of a server-side apply's merge) with the defaults a
        write adds, so that the change the apply makes is seen as kube-apiserver sees it (an
        atomic list re-applied without its defaults is no change). The applier does not
        own what this adds (``server_side_apply.apply``). Invalid objects are left to
        ``admit``."""
        schema = self.schema(rtype, version)
        obj = copy.deepcopy(obj)
        if schema is not None and (rtype.custom or not decode_errors(schema, obj)):
            _apply_all_defaults(rtype, schema, obj)
        return obj

    @staticmethod
    def applied_body(rtype: ResourceType, applied: Obj) -> Obj:
        """A server-side apply's body as its fields are owned: a Secret's ``stringData``
        merged into ``data`` (a copy; any other body as it is)."""
        if rtype.custom or rtype.group != "" or rtype.kind != "Secret" \
                or not isinstance(applied.get("stringData"), dict):
            return applied
        body = copy.deepcopy(applied)
        merge_string_data(body, default_type=False)
        return body

    def check_apply(self, rtype: ResourceType, version: str, applied: Obj) -> None:
        """A server-side apply whose body structured-merge-diff cannot read as the kind's
        type: 500 ``failed to create typed patch object: ...``, as kube-apiserver 1.20
        answers, before it reads the live object - for a built-in kind a field its schema
        does not declare (``.dat: field not declared in schema``; an update or patch drops
        such a field instead), else every problem of its associative lists
        (``typed.typed_errors``: an entry without its key, a null entry, an object in a set,
        two entries of one key), one, or several as SMD lists them (``errors:`` then one
        indented line each)."""
        schema = self.schema(rtype, version)
        unknown = undeclared_field(schema, applied) if schema is not None and not rtype.custom \
            else None
        if unknown is not None:
            raise st.StatusError(500, "", f"failed to create typed patch object: {unknown}: "
                                 "field not declared in schema")
        problems = typed_errors(schema, applied)
        if problems:
            shown = problems[0] if len(problems) == 1 else \
                "\n".join(["errors:", *("  " + p for p in problems)])
            raise st.StatusError(500, "", f"failed to create typed patch object: {shown}")
