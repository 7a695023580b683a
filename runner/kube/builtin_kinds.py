"""The scope and resource (plural) of Kubernetes' built-in kinds, known without discovery.

Used by the compiled plan (``kinrun.plan``) to check what depends on scope before a cluster is
reached (e.g. a ``mapTo: owner`` that can never produce a key), and by ``kinrun.rbac`` to name
the resource an RBAC rule grants (RBAC rules name resources, the plural, never kinds).
Discovery stays the truth at bind time; this table only answers for kinds every Kubernetes 1.20
API server serves, by API group and kind (versions change neither scope nor plural). The
plurals are the API server's REST paths (``kubectl api-resources`` on 1.20). Pure data.
"""

from __future__ import annotations

from kinrun.kube.resources import split_api_version

_NAMESPACED: dict[str, tuple[tuple[str, str], ...]] = {
    "": (("Pod", "pods"), ("ConfigMap", "configmaps"), ("Secret", "secrets"),
         ("Service", "services"), ("ServiceAccount", "serviceaccounts"),
         ("Endpoints", "endpoints"), ("Event", "events"), ("LimitRange", "limitranges"),
         ("PersistentVolumeClaim", "persistentvolumeclaims"), ("PodTemplate", "podtemplates"),
         ("ReplicationController", "replicationcontrollers"),
         ("ResourceQuota", "resourcequotas"), ("Binding", "bindings")),
    "apps": (("Deployment", "deployments"), ("StatefulSet", "statefulsets"),
             ("DaemonSet", "daemonsets"), ("ReplicaSet", "replicasets"),
             ("ControllerRevision", "controllerrevisions")),
    "batch": (("Job", "jobs"), ("CronJob", "cronjobs")),
    "autoscaling": (("HorizontalPodAutoscaler", "horizontalpodautoscalers"),),
    "networking.k8s.io": (("Ingress", "ingresses"), ("NetworkPolicy", "networkpolicies")),
    "rbac.authorization.k8s.io": (("Role", "roles"), ("RoleBinding", "rolebindings")),
    "coordination.k8s.io": (("Lease", "leases"),),
    "policy": (("PodDisruptionBudget", "poddisruptionbudgets"),),
    "events.k8s.io": (("Event", "events"),),
    "discovery.k8s.io": (("EndpointSlice", "endpointslices"),),
}
_CLUSTER: dict[str, tuple[tuple[str, str], ...]] = {
    "": (("Namespace", "namespaces"), ("Node", "nodes"),
         ("PersistentVolume", "persistentvolumes"), ("ComponentStatus", "componentstatuses")),
    "networking.k8s.io": (("IngressClass", "ingressclasses"),),
    "rbac.authorization.k8s.io": (("ClusterRole", "clusterroles"),
                                  ("ClusterRoleBinding", "clusterrolebindings")),
    "policy": (("PodSecurityPolicy", "podsecuritypolicies"),),
    "storage.k8s.io": (("StorageClass", "storageclasses"), ("CSIDriver", "csidrivers"),
                       ("CSINode", "csinodes"), ("VolumeAttachment", "volumeattachments")),
    "apiextensions.k8s.io": (("CustomResourceDefinition", "customresourcedefinitions"),),
    "admissionregistration.k8s.io": (
        ("MutatingWebhookConfiguration", "mutatingwebhookconfigurations"),
        ("ValidatingWebhookConfiguration", "validatingwebhookconfigurations")),
    "scheduling.k8s.io": (("PriorityClass", "priorityclasses"),),
    "certificates.k8s.io": (("CertificateSigningRequest", "certificatesigningrequests"),),
    "apiregistration.k8s.io": (("APIService", "apiservices"),),
    "node.k8s.io": (("RuntimeClass", "runtimeclasses"),),
    "flowcontrol.apiserver.k8s.io": (("FlowSchema", "flowschemas"),
                                     ("PriorityLevelConfiguration",
                                      "prioritylevelconfigurations")),
}
_SCOPE = {**{(g, k): True for g, kinds in _NAMESPACED.items() for k, _ in kinds},
          **{(g, k): False for g, kinds in _CLUSTER.items() for k, _ in kinds}}
_PLURAL = {(g, k): p for table in (_NAMESPACED, _CLUSTER) for g, kinds in table.items()
           for k, p in kinds}
_KIND_OF = {(g, p): k for (g, k), p in _PLURAL.items()}


def _group(api_version: str) -> str | None:
    try:
        return split_api_version(api_version)[0]
    except ValueError:
        return None


def builtin_scope(api_version: str, kind: str) -> bool | None:
    """True when the built-in ``kind`` of ``api_version``'s group is namespaced, False when it
    is cluster-scoped, None when it is not a built-in kind (a CRD: ask discovery) or the
    apiVersion is malformed."""
    group = _group(api_version)
    return None if group is None else _SCOPE.get((group, kind))


def builtin_resource(api_version: str, kind: str) -> str | None:
    """The resource (lowercase plural, as RBAC rules and REST paths name it) of the built-in
    ``kind`` of ``api_version``'s group: ``("apps/v1", "Deployment") -> "deployments"``; None
    when it is not a built-in kind (a CRD's plural is its own: ask discovery) or the
    apiVersion is malformed."""
    group = _group(api_version)
    return None if group is None else _PLURAL.get((group, kind))


def builtin_kind(api_version: str, resource: str) -> str | None:
    """The built-in kind served as ``resource`` (a plural) in ``api_version``'s group, the
    inverse of :func:`builtin_resource`: ``("v1", "configmaps") -> "ConfigMap"``; None when
    unknown."""
    group = _group(api_version)
    return None if group is None else _KIND_OF.get((group, resource))


_GROUPS = frozenset(_NAMESPACED) | frozenset(_CLUSTER)


def builtin_group(api_version: str) -> bool:
    """Whether ``api_version``'s API group is one of the built-in groups of this table (the
    API server itself serves their fixed set of kinds; a CRD's group is never one of them:
    ``gateway.networking.k8s.io`` is not ``networking.k8s.io``). False for a malformed
    apiVersion."""
    return _group(api_version) in _GROUPS


def unserved_builtin(api_version: str, kind: str | None, resource: str | None) -> str | None:
    """Why ``kind`` (or ``resource``) is not served in ``api_version`` when its group is a
    built-in one and the name is surely wrong: served by another built-in group
    (``("apps/v1", "Pod")``: "kind 'Pod' is not served in API group apps; it is served as
    apiVersion v1"), or a typo of a name the group serves (at most two letters off, or
    another case: "did you mean 'Deployment'?"). None when it is served, when it may be a
    kind added to the group after 1.20, the table's release (``ValidatingAdmissionPolicy``:
    discovery tells at run time), when the group is not built-in (a CRD's), or when the
    apiVersion is malformed."""
    group = _group(api_version)
    if group not in _GROUPS:
        return None
    if resource is not None:
        if (group, resource) in _KIND_OF:
            return None
        return _unserved(f"resource {resource!r}", resource, group,
                         {p for (g, _), p in _PLURAL.items() if g == group},
                         [g for (g, p) in _KIND_OF if p == resource])
    if kind is None or (group, kind) in _PLURAL:
        return None
    return _unserved(f"kind {kind!r}", kind, group, {k for (g, k) in _PLURAL if g == group},
                     [g for (g, k) in _PLURAL if k == kind])


def _unserved(what: str, name: str, group: str, names: set[str], elsewhere: list[str]
              ) -> str | None:
    shown = group or "core (v1)"
    if elsewhere:
        where = ", ".join(sorted(f"{g}/<version>" if g else "v1" for g in elsewhere))
        return f"{what} is not served in API group {shown}; it is served as apiVersion {where}"
    close = sorted(n for n in names if typo_distance(name.lower(), n.lower()) <= 2)
    return f"{what} is not served in API group {shown}; did you mean {close[0]!r}?" \
        if close else None


def typo_distance(a: str, b: str) -> int:
    """The optimal-string-alignment distance of ``a`` and ``b``: insertions, deletions,
    substitutions and swaps of two neighbouring letters, each one step."""
    previous, row = [], list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        before, previous, row = previous, row, [i] + [0] * len(b)
        for j, cb in enumerate(b, 1):
            row[j] = min(previous[j] + 1, row[j - 1] + 1, previous[j - 1] + (ca != cb))
            if i > 1 and j > 1 and ca == b[j - 2] and a[i - 2] == cb:
                row[j] = min(row[j], before[j - 2] + 1)
    return row[-1]
