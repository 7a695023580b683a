"""The registry of served kinds (GVK <-> GVR, scope, verbs) and the discovery documents.

Built-in kinds are declared here once; CustomResourceDefinitions created through the server add
their kinds (``ResourceType.from_crd``) and disappear when the CRD is deleted. Discovery answers
(``/api``, ``/api/v1``, ``/apis``, ``/apis/<g>``, ``/apis/<g>/<v>``) are built from the registry,
in the legacy (non-aggregated) format of ``metav1.APIVersions``/``APIGroupList``/
``APIResourceList``, as kube-apiserver's ``endpoints/discovery`` package serves them.

Concurrency: ``Registry`` is copy-on-write. Readers use the current snapshot without a lock;
``add``/``remove`` replace the snapshot (callers serialise them: the store calls them under its
lock).
"""

from __future__ import annotations

import functools
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

ALL_VERBS = ("create", "delete", "deletecollection", "get", "list", "patch", "update", "watch")
NAMESPACE_VERBS = ("create", "delete", "get", "list", "patch", "update", "watch")
BASE_FIELDS = ("metadata.name", "metadata.namespace")
POD_FIELDS = ("spec.nodeName", "status.phase", "spec.restartPolicy", "spec.schedulerName",
              "spec.serviceAccountName", "spec.hostNetwork", "status.podIP",
              "status.nominatedNodeName")
EVENT_FIELDS = ("involvedObject.kind", "involvedObject.namespace", "involvedObject.name",
                "involvedObject.uid", "involvedObject.apiVersion",
                "involvedObject.resourceVersion", "involvedObject.fieldPath", "reason",
                "reportingComponent", "source", "type")
EVENTS_V1_FIELDS = ("regarding.kind", "regarding.namespace", "regarding.name", "regarding.uid",
                    "regarding.apiVersion", "reason", "reportingController", "type")
BUILTIN_SCALE = ("spec.replicas", "status.replicas", "spec.selector")
"""Where the built-in scalable kinds keep replicas and selector (autoscaling/v1 Scale)."""
BUILTIN_PATCH_TYPES = ("application/json-patch+json", "application/merge-patch+json",
                       "application/strategic-merge-patch+json", "application/apply-patch+yaml")
CUSTOM_PATCH_TYPES = ("application/json-patch+json", "application/merge-patch+json",
                      "application/apply-patch+yaml")


@dataclass(frozen=True, slots=True)
class ResourceType:
    """One served resource (a GVR family sharing storage across its versions).

    ``group`` ("" for core), ``versions`` (served versions, storage version first), ``kind``,
    ``plural`` (the URL segment), ``singular``, ``namespaced``, ``short_names``, ``verbs``,
    ``categories``, ``has_status`` (a ``/status`` subresource exists: the main endpoint ignores
    status changes), ``tracks_generation`` (``metadata.generation`` starts at 1 and is bumped on
    changes outside metadata and status), ``selectable_fields`` (field-selector keys accepted
    besides the metadata ones), ``patch_types`` (accepted PATCH content types), ``custom``
    (defined by a CRD), ``scale`` (a ``/scale`` subresource: the dotted paths of spec
    replicas, status replicas and the label selector, "" when absent; None: no subresource).
    """

    group: str
    versions: tuple[str, ...]
    kind: str
    plural: str
    singular: str
    namespaced: bool
    short_names: tuple[str, ...] = ()
    verbs: tuple[str, ...] = ALL_VERBS
    categories: tuple[str, ...] = ()
    has_status: bool = False
    tracks_generation: bool = False
    selectable_fields: tuple[str, ...] = ()
    patch_types: tuple[str, ...] = BUILTIN_PATCH_TYPES
    custom: bool = False
    list_kind: str = ""
    scale: tuple[str, str, str] | None = None

    @property
    def key(self) -> tuple[str, str]:
        """Storage identity ``(group, plural)``: every version of a kind shares one collection."""
        return (self.group, self.plural)

    @property
    def storage_version(self) -> str:
        """The first served version; objects are stored with this apiVersion."""
        return self.versions[0]

    def api_version(self, version: str | None = None) -> str:
        """``v1`` for core, ``group/version`` otherwise (default: the storage version)."""
        version = version or self.storage_version
        return f"{self.group}/{version}" if self.group else version

    @property
    def field_keys(self) -> frozenset[str]:
        """Every field-selector key this resource accepts."""
        return _field_keys(self.selectable_fields)

    @property
    def list_kind_name(self) -> str:
        """The list kind, ``PodList`` for ``Pod``."""
        return self.list_kind or f"{self.kind}List"

    @staticmethod
    def from_crd(crd: dict[str, Any]) -> ResourceType:
        """Build the resource a CustomResourceDefinition (apiextensions.k8s.io/v1) declares:
        served versions (storage one first), scope, names, status subresource and
        selectableFields of any version. Raises KeyError/TypeError on a malformed spec (the
        caller validates first)."""
        spec = crd["spec"]
        names = spec["names"]
        versions = [v for v in spec.get("versions") or [] if v.get("served", True)]
        versions.sort(key=lambda v: not v.get("storage", False))
        fields: list[str] = []
        has_status = False
        scale = None
        for v in versions:
            has_status = has_status or "status" in ((v.get("subresources") or {}))
            declared = (v.get("subresources") or {}).get("scale")
            if isinstance(declared, dict) and scale is None:
                scale = tuple(str(declared.get(k) or "").lstrip(".") for k in (
                    "specReplicasPath", "statusReplicasPath", "labelSelectorPath"))
            for sf in v.get("selectableFields") or []:
                path = str(sf.get("jsonPath", "")).lstrip(".")
                if path and path not in fields:
                    fields.append(path)
        return ResourceType(
            group=spec["group"], versions=tuple(v["name"] for v in versions), kind=names["kind"],
            plural=names["plural"], singular=names.get("singular") or names["kind"].lower(),
            namespaced=spec.get("scope", "Namespaced") == "Namespaced",
            short_names=tuple(names.get("shortNames") or ()),
            categories=tuple(names.get("categories") or ()), has_status=has_status,
            tracks_generation=True, selectable_fields=tuple(fields),
            patch_types=CUSTOM_PATCH_TYPES, custom=True, list_kind=names.get("listKind", ""),
            scale=scale)  # type: ignore[arg-type]


@functools.lru_cache(maxsize=None)
def _field_keys(extra: tuple[str, ...]) -> frozenset[str]:
    return frozenset(BASE_FIELDS + extra)


def _builtin(group: str, kind: str, plural: str, namespaced: bool = True, *,
             short: Iterable[str] = (), status: bool = False, generation: bool = False,
             fields: Iterable[str] = (), categories: Iterable[str] = (),
             verbs: tuple[str, ...] = ALL_VERBS, version: str = "v1",
             scale: bool = False) -> ResourceType:
    return ResourceType(group=group, versions=(version,), kind=kind, plural=plural,
                        singular=kind.lower(), namespaced=namespaced, short_names=tuple(short),
                        verbs=verbs, categories=tuple(categories), has_status=status,
                        tracks_generation=generation, selectable_fields=tuple(fields),
                        scale=BUILTIN_SCALE if scale else None)


BUILTINS: tuple[ResourceType, ...] = (
    _builtin("", "Pod", "pods", short=["po"], status=True, fields=POD_FIELDS,
             categories=["all"]),
    _builtin("", "ConfigMap", "configmaps", short=["cm"]),
    _builtin("", "Secret", "secrets", fields=["type"]),
    _builtin("", "Service", "services", short=["svc"], status=True, categories=["all"]),
    _builtin("", "Namespace", "namespaces", False, short=["ns"], status=True,
             fields=["status.phase"], verbs=NAMESPACE_VERBS),
    _builtin("", "Event", "events", short=["ev"], fields=EVENT_FIELDS),
    _builtin("", "ServiceAccount", "serviceaccounts", short=["sa"]),
    _builtin("", "Node", "nodes", False, short=["no"], status=True, fields=["spec.unschedulable"]),
    _builtin("", "Endpoints", "endpoints", short=["ep"]),
    _builtin("", "PersistentVolumeClaim", "persistentvolumeclaims", short=["pvc"], status=True),
    _builtin("", "ReplicationController", "replicationcontrollers", short=["rc"], status=True,
             generation=True, categories=["all"], scale=True),
    _builtin("apps", "Deployment", "deployments", short=["deploy"], status=True, generation=True,
             categories=["all"], scale=True),
    _builtin("apps", "ReplicaSet", "replicasets", short=["rs"], status=True, generation=True,
             categories=["all"], scale=True),
    _builtin("apps", "StatefulSet", "statefulsets", short=["sts"], status=True, generation=True,
             categories=["all"], scale=True),
    _builtin("apps", "DaemonSet", "daemonsets", short=["ds"], status=True, generation=True,
             categories=["all"]),
    _builtin("batch", "Job", "jobs", status=True, generation=True, categories=["all"]),
    _builtin("networking.k8s.io", "Ingress", "ingresses", short=["ing"], status=True,
             generation=True),
    _builtin("coordination.k8s.io", "Lease", "leases"),
    _builtin("events.k8s.io", "Event", "events", short=["ev"], fields=EVENTS_V1_FIELDS),
    _builtin("authorization.k8s.io", "SelfSubjectAccessReview", "selfsubjectaccessreviews",
             False, verbs=("create",)),
    _builtin("authorization.k8s.io", "SelfSubjectRulesReview", "selfsubjectrulesreviews",
             False, verbs=("create",)),
    _builtin("admissionregistration.k8s.io", "MutatingWebhookConfiguration",
             "mutatingwebhookconfigurations", False, generation=True,
             categories=["api-extensions"]),
    _builtin("admissionregistration.k8s.io", "ValidatingWebhookConfiguration",
             "validatingwebhookconfigurations", False, generation=True,
             categories=["api-extensions"]),
    _builtin("apiextensions.k8s.io", "CustomResourceDefinition", "customresourcedefinitions",
             False, short=["crd", "crds"], status=True, generation=True, categories=["api-extensions"]),
)


@dataclass(frozen=True, slots=True)
class _Snapshot:
    by_key: dict[tuple[str, str], ResourceType] = field(default_factory=dict)
    # (group, version, plural) -> type; (apiVersion, kind) -> type
    by_path: dict[tuple[str, str, str], ResourceType] = field(default_factory=dict)
    by_kind: dict[tuple[str, str], ResourceType] = field(default_factory=dict)


class Registry:
    """The served kinds. Lookups are lock-free reads of an immutable snapshot; ``add``/``remove``
    must be serialised by the caller (the store holds its lock)."""

    def __init__(self, types: Iterable[ResourceType] = BUILTINS) -> None:
        self._types: list[ResourceType] = list(types)
        self._snap = self._build(self._types)

    @staticmethod
    def _build(types: list[ResourceType]) -> _Snapshot:
        snap = _Snapshot()
        for t in types:
            snap.by_key[t.key] = t
            for v in t.versions:
                snap.by_path[(t.group, v, t.plural)] = t
                snap.by_kind[(t.api_version(v), t.kind)] = t
        return snap

    def add(self, rtype: ResourceType) -> None:
        """Serve ``rtype`` (replacing a type with the same key). Caller serialises writers."""
        self._types = [t for t in self._types if t.key != rtype.key] + [rtype]
        self._snap = self._build(self._types)

    def remove(self, key: tuple[str, str]) -> None:
        """Stop serving the type with storage key ``(group, plural)``."""
        self._types = [t for t in self._types if t.key != key]
        self._snap = self._build(self._types)

    def types(self) -> list[ResourceType]:
        """Every served type (a copy)."""
        return list(self._types)

    def get(self, key: tuple[str, str]) -> ResourceType | None:
        """The type stored under ``(group, plural)``, or None."""
        return self._snap.by_key.get(key)

    def by_path(self, group: str, version: str, plural: str) -> ResourceType | None:
        """The type served at ``/apis/<group>/<version>/<plural>`` (core: group ""), or None."""
        return self._snap.by_path.get((group, version, plural))

    def by_kind(self, api_version: str, kind: str) -> ResourceType | None:
        """The type for an object's ``apiVersion``/``kind``, or None."""
        return self._snap.by_kind.get((api_version, kind))

    def group_versions(self) -> dict[str, list[str]]:
        """Non-core groups -> their served versions (preferred first), in registration order."""
        out: dict[str, list[str]] = {}
        for t in self._types:
            if t.group:
                versions = out.setdefault(t.group, [])
                versions.extend(v for v in t.versions if v not in versions)
        return out

    # -- discovery documents -------------------------------------------------------------------

    def api_versions(self, server_address: str) -> dict[str, Any]:
        """``/api``: metav1.APIVersions."""
        return {"kind": "APIVersions", "versions": ["v1"],
                "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0",
                                                "serverAddress": server_address}]}

    def api_group(self, group: str) -> dict[str, Any] | None:
        """``/apis/<group>``: metav1.APIGroup, or None when the group is not served."""
        versions = self.group_versions().get(group)
        if not versions:
            return None
        gvs = [{"groupVersion": f"{group}/{v}", "version": v} for v in versions]
        return {"kind": "APIGroup", "apiVersion": "v1", "name": group, "versions": gvs,
                "preferredVersion": gvs[0]}

    def api_group_list(self) -> dict[str, Any]:
        """``/apis``: metav1.APIGroupList."""
        groups = [self.api_group(g) for g in self.group_versions()]
        for g in groups:
            if g:
                del g["kind"], g["apiVersion"]
        return {"kind": "APIGroupList", "apiVersion": "v1", "groups": groups}

    def resource_list(self, group: str, version: str) -> dict[str, Any] | None:
        """``/api/v1`` or ``/apis/<g>/<v>``: metav1.APIResourceList, or None if not served."""
        resources: list[dict[str, Any]] = []
        for t in self._types:
            if t.group != group or version not in t.versions:
                continue
            res: dict[str, Any] = {"name": t.plural, "singularName": t.singular,
                                   "namespaced": t.namespaced, "kind": t.kind,
                                   "verbs": list(t.verbs)}
            if t.short_names:
                res["shortNames"] = list(t.short_names)
            if t.categories:
                res["categories"] = list(t.categories)
            resources.append(res)
            if t.has_status:
                resources.append({"name": f"{t.plural}/status", "singularName": "",
                                  "namespaced": t.namespaced, "kind": t.kind,
                                  "verbs": ["get", "patch", "update"]})
            if t.scale is not None:
                resources.append({"name": f"{t.plural}/scale", "singularName": "",
                                  "namespaced": t.namespaced, "group": "autoscaling",
                                  "version": "v1", "kind": "Scale",
                                  "verbs": ["get", "patch", "update"]})
        if not resources:
            return None
        gv = f"{group}/{version}" if group else version
        return {"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": gv,
                "resources": resources}
