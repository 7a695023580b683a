"""ApiRequest: one API write, described as data before it is sent.

Actions render into ApiRequests (so ``kinrun render`` can print them without sending); the kube
client executes them (``kinrun.kube.Client.execute``). Keeping the description separate from the
sending is what lets a whole reconcile be checked before anything is applied.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

Verb = Literal["get", "create", "apply", "patch", "delete", "update"]
PatchType = Literal["merge", "json", "strategic"]


@dataclass(frozen=True)
class ApiRequest:
    """One API request.

    Fields: ``verb``; ``api_version`` (``v1`` or ``group/version``) and ``kind`` of the target;
    ``name`` and ``namespace`` (None for cluster-scoped); ``body`` (the manifest for create/
    apply/update, the patch document for patch: a dict for merge/strategic, a list for json);
    ``patch_type`` for patch; ``subresource`` (``status`` or None); ``params`` (query
    parameters such as ``fieldManager``, ``force``, ``propagationPolicy``; preconditions for
    delete go in ``body`` as a DeleteOptions dict).
    """

    verb: Verb
    api_version: str
    kind: str
    name: str
    namespace: str | None = None
    body: Any = None
    patch_type: PatchType | None = None
    subresource: str | None = None
    params: dict[str, Any] = field(default_factory=dict)

    def summary(self) -> str:
        """One line for logs: ``apply ConfigMap default/settings-child`` (``/status`` appended
        for the status subresource; a create by ``generateName`` shows ``run-<generated>``)."""
        name = self.name
        if not name and isinstance(self.body, dict):
            generate = (self.body.get("metadata") or {}).get("generateName")
            name = f"{generate}<generated>" if generate else name
        target = f"{self.namespace}/{name}" if self.namespace else name
        sub = f"/{self.subresource}" if self.subresource else ""
        return f"{self.verb} {self.kind} {target}{sub}"

    def describe(self) -> dict[str, Any]:
        """A JSON-ready dict of the request, as ``kinrun render`` prints it."""
        out: dict[str, Any] = {"verb": self.verb, "apiVersion": self.api_version,
                               "kind": self.kind, "name": self.name}
        if self.namespace is not None:
            out["namespace"] = self.namespace
        if self.subresource:
            out["subresource"] = self.subresource
        if self.patch_type:
            out["patchType"] = self.patch_type
        if self.params:
            out["params"] = dict(self.params)
        if self.body is not None:
            out["body"] = self.body
        return out
