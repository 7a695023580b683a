"""Per-kind REST strategy: what create and update do to ``status`` and kind-specific defaults.

As kube-apiserver's registry strategies (``PrepareForCreate``/``PrepareForUpdate``): for a kind
with a status subresource, create resets ``status`` (a Pod starts ``Pending``), the main
endpoint keeps the stored ``status`` whatever the body says, and ``/status`` changes only
``status``. Namespaces default to phase ``Active`` (with the ``kubernetes`` spec finalizer),
Pods get the common spec defaults (restartPolicy, terminationGracePeriodSeconds, ...); a CustomResourceDefinition is marked
``Established`` and ``NamesAccepted`` at once (the real server does it a moment later). All
functions are pure except ``apply_defaults``/``reset_status``, which fill an object the caller
owns.
"""

from __future__ import annotations

from typing import Any

from kinrun.openapi import parse_quantity

from .registry import ResourceType

Obj = dict[str, Any]
POD_SPEC_DEFAULTS: Obj = {"restartPolicy": "Always", "terminationGracePeriodSeconds": 30,
                          "dnsPolicy": "ClusterFirst", "schedulerName": "default-scheduler",
                          "securityContext": {}}


def crd_status(crd: Obj, now: str) -> Obj:
    """The status an established CRD reports: conditions, acceptedNames, storedVersions."""
    spec = crd.get("spec") or {}
    names = dict(spec.get("names") or {})
    names.setdefault("singular", str(names.get("kind", "")).lower())
    names.setdefault("listKind", f"{names.get('kind', '')}List")
    stored = [v["name"] for v in spec.get("versions") or [] if v.get("storage")]
    conditions = [
        {"type": "NamesAccepted", "status": "True", "reason": "NoConflicts",
         "message": "no conflicts found", "lastTransitionTime": now},
        {"type": "Established", "status": "True", "reason": "InitialNamesAccepted",
         "message": "the initial names have been accepted", "lastTransitionTime": now},
    ]
    return {"conditions": conditions, "acceptedNames": names, "storedVersions": stored}


def apply_defaults(rtype: ResourceType, obj: Obj, now: str) -> None:
    """Fill kind-specific defaults on a new object (namespace phase, CRD established status)."""
    if rtype.group == "" and rtype.kind == "Namespace":
        status = obj.get("status") if isinstance(obj.get("status"), dict) else {}
        obj["status"] = {**status, "phase": status.get("phase") or "Active"}
        spec = obj.get("spec") if isinstance(obj.get("spec"), dict) else {}
        obj["spec"] = {**spec, "finalizers": spec.get("finalizers") or ["kubernetes"]}
    elif rtype.group == "" and rtype.kind == "Pod" and isinstance(obj.get("spec"), dict):
        obj["spec"] = {**POD_SPEC_DEFAULTS, **obj["spec"]}
        default_requests(obj["spec"])
        if "status" not in obj:  # a seeded Pod without status: as a create through the API
            obj["status"] = {"phase": "Pending", "qosClass": pod_qos(obj["spec"])}
    elif rtype.group == "apiextensions.k8s.io" and rtype.kind == "CustomResourceDefinition":
        if not (obj.get("status") or {}).get("conditions"):
            obj["status"] = crd_status(obj, now)


_QOS_RESOURCES = ("cpu", "memory")


def _containers(spec: Obj) -> list[Obj]:
    return [c for field in ("initContainers", "containers") for c in spec.get(field) or []
            if isinstance(c, dict)]


def default_requests(spec: Obj) -> None:
    """A Pod's containers request what they limit, where they name no request of their own
    (kube-apiserver's ``SetDefaults_Pod``; pod templates are not defaulted so). Every write
    through the API gets it when admitted (``schemas``), a seeded Pod in ``apply_defaults``."""
    for container in _containers(spec):
        resources = container.get("resources")
        limits = resources.get("limits") if isinstance(resources, dict) else None
        if isinstance(limits, dict) and limits:
            requests = resources.get("requests") if isinstance(resources.get("requests"),
                                                               dict) else {}
            resources["requests"] = {**limits, **requests}


def pod_qos(spec: Obj) -> str:
    """A Pod's QoS class from its containers' cpu and memory requests and limits (as
    kubelet's ``GetPodQOS``): BestEffort when none is set (zero counts as unset), Guaranteed
    when every container limits both and requests what it limits, else Burstable."""
    def nonzero(values: Any) -> dict[str, Any]:
        parsed = {name: parse_quantity(value) for name, value in
                  (values.items() if isinstance(values, dict) else ()) if name in _QOS_RESOURCES}
        return {name: p[0] for name, p in parsed.items() if p is not None and p[0] != 0}

    any_set, guaranteed = False, True
    for container in _containers(spec):
        resources = container.get("resources") if isinstance(container.get("resources"),
                                                             dict) else {}
        requests, limits = nonzero(resources.get("requests")), nonzero(resources.get("limits"))
        any_set = any_set or bool(requests or limits)
        if set(limits) != set(_QOS_RESOURCES) or any(requests.get(k, v) != v
                                                     for k, v in limits.items()):
            guaranteed = False
    if not any_set:
        return "BestEffort"
    return "Guaranteed" if guaranteed else "Burstable"


def reset_status(rtype: ResourceType, obj: Obj) -> None:
    """On create through the API: a kind with a status subresource starts without status (a
    Pod with phase Pending), as the strategies' PrepareForCreate."""
    if not rtype.has_status:
        return
    if rtype.group == "" and rtype.kind == "Pod":
        spec = obj.get("spec") if isinstance(obj.get("spec"), dict) else {}  # admitted:
        obj["status"] = {"phase": "Pending", "qosClass": pod_qos(spec)}   # requests defaulted
    elif rtype.group == "" and rtype.kind in ("Namespace", "Service", "Node",
                                              "PersistentVolumeClaim"):
        return
    else:
        obj.pop("status", None)


def prepare_for_update(rtype: ResourceType, new: Obj, old: Obj, subresource: str) -> Obj:
    """The object to store when ``new`` replaces ``old`` through the main endpoint
    (``subresource == ""``: status kept from ``old`` when the kind has a status subresource) or
    through ``/status`` (everything but ``status`` kept from ``old``; the body's
    ``metadata.resourceVersion`` still guards the write). Never mutates its inputs."""
    if subresource == "status":
        result = dict(old)
        meta = dict(old.get("metadata") or {})
        new_meta = new.get("metadata") or {}
        new_rv = new_meta.get("resourceVersion")
        if new_rv:
            meta["resourceVersion"] = new_rv
        else:
            meta.pop("resourceVersion", None)
        if "managedFields" in new_meta:            # the status writer's own entry
            meta["managedFields"] = new_meta["managedFields"]
        result["metadata"] = meta
        if "status" in new:
            result["status"] = new["status"]
        else:
            result.pop("status", None)
        return result
    if not rtype.has_status:
        return new
    result = dict(new)
    if "status" in old:
        result["status"] = old["status"]
    else:
        result.pop("status", None)
    return result
