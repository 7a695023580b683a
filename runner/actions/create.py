"""The ``create`` action: POST a new object, typically one named by the server (``generateName``).

For objects that should exist once with a fixed name, ``apply`` is the idempotent choice: a
``create`` of a name that exists fails the reconcile with the server's 409 AlreadyExists
(retried like any API error). ``create`` is for objects made per event (a Job per run, a
report): the server's answer (the created object, with its generated name and uid) is what a
later action reads as ``results.<name>`` (:mod:`kinrun.actions.results`).
"""

from __future__ import annotations

from typing import Any

from kinrun.actions.kinds import (
    CheckError, Scope, _bool, _set_namespace, _options, _setting, compile_document, own,
)
from kinrun.actions.steps import Step
from kinrun.kube.request import ApiRequest
from kinrun.templating import SourceLocation, TemplateEngine, describe


class CreateAction:
    """``create: {manifest, ownerReference: true}`` -> one POST (``Client.execute`` verb
    ``create``).

    The manifest renders to one mapping with string ``apiVersion`` and ``kind`` and a
    ``metadata.name`` or ``metadata.generateName``; namespace rule as ``apply``. With
    ``ownerReference`` (default) the reconciled object becomes the controller owner (skipped
    in ``onDelete``; a cross-namespace owner is a CheckError, as for ``apply``).
    """

    kind = "create"
    VERBS: tuple[str, ...] = ("create",)
    """RBAC verbs on the manifest's resource (``kinrun.rbac``): a POST is ``create``."""
    DRY_RUN_VERBS: tuple[str, ...] = ()
    """A dry-run create reads nothing first (there is no current object)."""

    def __init__(self, value: Any, engine: TemplateEngine, loc: SourceLocation) -> None:
        value = _options(value, loc, "create")
        self._manifest = compile_document(value["manifest"], engine, loc.child(".manifest"))
        self._owner = _bool(_setting(value, "create", "ownerReference"), loc,
                            "create.ownerReference")
        self.owner_given = value.get("ownerReference") is True
        self.manifest_source = value["manifest"]

    def render(self, scope: Scope) -> list[Step]:
        manifest = self._manifest(scope.variables)
        if not isinstance(manifest, dict):
            raise CheckError(f"create: the manifest must render to a mapping, got "
                             f"{type(manifest).__name__}")
        for field in ("apiVersion", "kind"):
            if not isinstance(manifest.get(field), str) or not manifest[field]:
                raise CheckError(f"create: manifest: {field} must be a non-empty string")
        meta = manifest.get("metadata")
        if not isinstance(meta, dict):
            raise CheckError(f"create: manifest: metadata must be a mapping, got "
                             f"{describe(meta)}")
        name, generate = meta.get("name"), meta.get("generateName")
        if not (isinstance(name, str) and name) and not (isinstance(generate, str) and generate):
            raise CheckError("create: manifest: metadata needs a name or a generateName")
        namespace = _set_namespace(meta, scope, "create")
        if self._owner and scope.obj is not None:
            own(manifest, scope, namespace, "create", self.owner_given)
        return [ApiRequest("create", manifest["apiVersion"], manifest["kind"],
                           name if isinstance(name, str) else "", namespace, body=manifest)]
