"""The scope of Kubernetes' built-in kinds, known without discovery.

Used by the compiled plan (``kinrun.plan``) to check what depends on scope before a cluster is
reached (e.g. a ``mapTo: owner`` that can never produce a key). Discovery stays the truth at
bind time; this table only answers for kinds every Kubernetes 1.20 API server serves, by API
group and kind (versions do not change scope). Pure data.
"""

from __future__ import annotations

from kinrun.kube.resources import split_api_version

_NAMESPACED = {
    "": ("Pod", "ConfigMap", "Secret", "Service", "ServiceAccount", "Endpoints", "Event",
         "LimitRange", "PersistentVolumeClaim", "PodTemplate", "ReplicationController",
         "ResourceQuota", "Binding"),
    "apps": ("Deployment", "StatefulSet", "DaemonSet", "ReplicaSet", "ControllerRevision"),
    "batch": ("Job", "CronJob"),
    "autoscaling": ("HorizontalPodAutoscaler",),
    "networking.k8s.io": ("Ingress", "NetworkPolicy"),
    "rbac.authorization.k8s.io": ("Role", "RoleBinding"),
    "coordination.k8s.io": ("Lease",),
    "policy": ("PodDisruptionBudget",),
    "events.k8s.io": ("Event",),
    "discovery.k8s.io": ("EndpointSlice",),
}
_CLUSTER = {
    "": ("Namespace", "Node", "PersistentVolume", "ComponentStatus"),
    "networking.k8s.io": ("IngressClass",),
    "rbac.authorization.k8s.io": ("ClusterRole", "ClusterRoleBinding"),
    "policy": ("PodSecurityPolicy",),
    "storage.k8s.io": ("StorageClass", "CSIDriver", "CSINode", "VolumeAttachment"),
    "apiextensions.k8s.io": ("CustomResourceDefinition",),
    "admissionregistration.k8s.io": ("MutatingWebhookConfiguration",
                                     "ValidatingWebhookConfiguration"),
    "scheduling.k8s.io": ("PriorityClass",),
    "certificates.k8s.io": ("CertificateSigningRequest",),
    "apiregistration.k8s.io": ("APIService",),
    "node.k8s.io": ("RuntimeClass",),
    "flowcontrol.apiserver.k8s.io": ("FlowSchema", "PriorityLevelConfiguration"),
}
_SCOPE = {**{(g, k): True for g, kinds in _NAMESPACED.items() for k in kinds},
          **{(g, k): False for g, kinds in _CLUSTER.items() for k in kinds}}


def builtin_scope(api_version: str, kind: str) -> bool | None:
    """True when the built-in ``kind`` of ``api_version``'s group is namespaced, False when it
    is cluster-scoped, None when it is not a built-in kind (a CRD: ask discovery) or the
    apiVersion is malformed."""
    try:
        group, _version = split_api_version(api_version)
    except ValueError:
        return None
    return _SCOPE.get((group, kind))
